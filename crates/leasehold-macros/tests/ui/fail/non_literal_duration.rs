use leasehold::Elector;

const LEASE: &str = "30s";

#[leasehold::leader_only(elector = elector, lock = "report", lease = LEASE)]
async fn report(elector: &Elector) -> u32 {
    1
}

#[leasehold::leader_only(elector = elector, lock = "report", wait = 30s)]
async fn other(elector: &Elector) -> u32 {
    1
}

fn main() {}
