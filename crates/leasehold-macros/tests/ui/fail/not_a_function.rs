#[leasehold::leader_only(elector = elector, lock = "report")]
struct Report;

fn main() {}
