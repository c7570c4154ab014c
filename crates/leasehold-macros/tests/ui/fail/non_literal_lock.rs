use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = format!("report-{}", 1))]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
