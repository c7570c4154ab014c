use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report")]
fn report(elector: &Elector) -> u32 {
    let _ = elector;
    1
}

fn main() {}
