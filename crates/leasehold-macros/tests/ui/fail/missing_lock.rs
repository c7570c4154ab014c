use leasehold::Elector;

#[leasehold::leader_only(elector = elector)]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
