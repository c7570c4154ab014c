use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "report", context = self.ctx)]
async fn report(elector: &Elector) -> u32 {
    1
}

fn main() {}
