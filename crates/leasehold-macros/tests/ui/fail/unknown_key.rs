use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report", lease_time = "30s")]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
