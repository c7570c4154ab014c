use leasehold::Elector;

#[leasehold::leader_only(elector = elector, lock = "a", lease = "30x")]
async fn unknown_unit(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "b", wait = "-1s")]
async fn negative(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "c", min_lease = "36501d")]
async fn too_long(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "d", lease = "30")]
async fn no_unit(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "e", lease = "PT5X")]
async fn not_iso(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "f", wait = "")]
async fn empty(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "g", lease = "ms")]
async fn no_number(elector: &Elector) {}

#[leasehold::leader_only(elector = elector, lock = "h", wait = "1.2.3s")]
async fn bad_number(elector: &Elector) {}

fn main() {}
