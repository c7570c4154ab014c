//! The forms the attribute applies to: free functions and methods (`&self`, `&mut self`,
//! `self`), an elector behind `Arc` or a parameter or a call, generics, `impl Trait` arguments,
//! lifetimes, unit and `impl Trait` returns, `?` and `return` in the body.

#![deny(warnings)]

use std::fmt::Display;
use std::sync::Arc;

use leasehold::{Elector, LeaderContext, MemoryStore};

struct Service {
    elector: Arc<Elector>,
    name: String,
    count: u32,
}

fn elector_of(service: &Service) -> Arc<Elector> {
    service.elector.clone()
}

impl Service {
    #[leasehold::leader_only(elector = self.elector, lock = "service.read", context = ctx)]
    async fn read(&self) -> &str {
        let _: &LeaderContext = &ctx;
        &self.name
    }

    #[leasehold::leader_only(elector = elector_of(self), lock = "service/write")]
    async fn write(&mut self, by: u32) {
        self.count += by;
    }

    #[leasehold::leader_only(elector = self.elector.clone(), lock = "service:consume")]
    async fn consume(self) -> String {
        self.name
    }

    #[leasehold::leader_only(elector = self.elector, lock = "service.parse")]
    async fn parse<T: std::str::FromStr>(&self, text: impl AsRef<str>) -> Result<T, T::Err> {
        let value = text.as_ref().trim().parse()?;
        if text.as_ref().is_empty() {
            return text.as_ref().parse();
        }
        Ok(value)
    }
}

#[leasehold::leader_only(elector = elector, lock = "free")]
async fn free<'a, T>(elector: &Elector, items: &'a [T]) -> Option<&'a T>
where
    T: Sync,
{
    items.first()
}

#[leasehold::leader_only(elector = elector, lock = "shown")]
async fn shown(elector: &Elector, n: u32) -> impl Display {
    n + 1
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> leasehold::Result<()> {
    let elector = Arc::new(Elector::new(Arc::new(MemoryStore::new())));
    let mut service = Service {
        elector: elector.clone(),
        name: "billing".to_owned(),
        count: 0,
    };
    assert_eq!(service.read().await?, Some("billing"));
    assert_eq!(service.write(2).await?, Some(()));
    assert_eq!(service.count, 2);
    assert_eq!(service.parse::<u8>(" 7 ").await?, Some(Ok(7)));
    assert!(matches!(service.parse::<u8>("x").await?, Some(Err(_))));
    assert_eq!(free(&elector, &[3, 4]).await?, Some(Some(&3)));
    assert_eq!(shown(&elector, 1).await?.map(|s| s.to_string()), Some("2".to_owned()));
    assert_eq!(boxed(&elector).await?.map(|b| b.to_string()), Some("5".to_owned()));
    assert_eq!(inner_attribute(&elector).await?, Some(2));
    assert_eq!(service.consume().await?, Some("billing".to_owned()));
    Ok(())
}

/// The body's value is coerced to the written type (here an unsized coercion), and a body that
/// only diverges compiles without warnings.
#[leasehold::leader_only(elector = elector, lock = "boxed")]
async fn boxed(elector: &Elector) -> Box<dyn Display + Send> {
    Box::new(5)
}

#[allow(dead_code)]
#[leasehold::leader_only(elector = elector, lock = "diverges")]
async fn diverges(elector: &Elector) -> u32 {
    panic!("never called")
}

/// Inner attributes stay on the function (here one that allows the unused `spare`).
#[leasehold::leader_only(elector = elector, lock = "inner")]
async fn inner_attribute(elector: &Elector) -> u8 {
    #![allow(unused_variables)]
    let spare = 1;
    2
}
