#[leasehold::leader_only(lock = "report", lease = "30s")]
async fn report() -> u32 {
    1
}

fn main() {}
