use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report", auto_extend = "on")]
async fn report(elector: &Elector) -> u32 {
    1
}

#[leasehold::leader_only(elector = elector, lock = "report", cancel_on_lost = "yes")]
async fn other(elector: &Elector) -> u32 {
    1
}

fn main() {}
