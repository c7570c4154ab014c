use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report", lease = "30s", lease = "60s")]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
