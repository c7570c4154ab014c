use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "a", lease = "0")]
async fn zero_lease(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "b", lease = "50ms", auto_extend)]
async fn too_short_to_extend(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "c", lease = "1s", min_lease = "2s")]
async fn min_lease_beyond_lease(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "d", lease = "0.5ms", auto_extend = false)]
async fn below_min_lease(elector: &Elector) {}

fn main() {}
