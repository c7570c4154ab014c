use leasehold::Elector;

// Every refused literal of one attribute is reported, each at its own literal.
#[leasehold::leader_only(elector = elector, lock = "a b", lease = "5x", wait = "-1s")]
async fn three_mistakes(elector: &Elector) {}

// A lease refused by its own bound is reported once, at the lease (not again at the min_lease).
#[leasehold::leader_only(elector = elector, lock = "c", lease = "0", min_lease = "1s")]
async fn short_lease_and_min_lease(elector: &Elector) {}

fn main() {}
