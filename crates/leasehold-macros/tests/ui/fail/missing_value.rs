use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report", lease)]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
