use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "billing nightly")]
async fn bad_char(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "reports/../daily")]
async fn bad_segment(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "a..b")]
async fn double_dot(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "-report")]
async fn bad_first(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "")]
async fn empty(elector: &Elector) {}

#[leasehold::leader_only(
    elector = elector,
    lock = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)]
async fn too_long(elector: &Elector) {}

fn main() {}
