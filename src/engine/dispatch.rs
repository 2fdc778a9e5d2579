//! The one place that turns an `EngineConfig` and an `EngineSetup` into a
//! concrete engine. The caller passes an `EngineUser` whose generic `run`
//! receives the engine by value, so each engine gets its own monomorphized
//! copy of the runner's loop: no dynamic dispatch on the hot path.
//!
//! Adding an engine: a variant in `EngineKind` (with its `caps`), one in
//! `EngineConfig` (with its options), and one arm here.

use super::aio::AioEngine;
use super::fake::FakeEngine;
use super::iscsi::IscsiEngine;
use super::mmap::MmapEngine;
use super::nbd::NbdEngine;
use super::null::NullEngine;
use super::nvmetcp::NvmeTcpEngine;
use super::psync::PsyncEngine;
use super::uring::UringEngine;
use super::{Engine, EngineConfig, EngineSetup};
use crate::error::WorkerError;
use crate::measure::clock::{Clock, VirtualClock};

/// What to do with the engine once it is built (typically: run the worker
/// loop on it). `run` is generic, hence one copy per engine type.
pub trait EngineUser {
    type Output;
    fn run<E: Engine>(self, engine: E) -> Self::Output;
}

/// Build the engine `config` names on `setup` and hand it to `user`.
/// A failure to build it is a `WorkerError` of the right kind (`Setup` when
/// the engine cannot work on this machine or target).
pub fn with_engine<C: Clock, U: EngineUser>(
    config: &EngineConfig,
    setup: &EngineSetup,
    clock: &C,
    user: U,
) -> Result<U::Output, WorkerError> {
    let setup_err = |what: &'static str| move |source| WorkerError::Setup { what, source };
    Ok(match config {
        EngineConfig::Null => user.run(NullEngine::new(setup.depth)),
        EngineConfig::Psync => {
            let fd = setup.target.local_fd("psync").map_err(setup_err("psync"))?;
            user.run(PsyncEngine::new(fd))
        }
        EngineConfig::Aio => user.run(AioEngine::new(setup).map_err(setup_err("kernel AIO"))?),
        EngineConfig::IoUring(opts) => {
            user.run(UringEngine::new(setup, *opts).map_err(setup_err("io_uring"))?)
        }
        EngineConfig::Mmap => {
            let e = MmapEngine::new(setup).map_err(|e| WorkerError::Prepare {
                what: "cannot map the target",
                source: e.into(),
            })?;
            user.run(e)
        }
        EngineConfig::Nbd(net) => {
            user.run(NbdEngine::with_options(setup, *net).map_err(setup_err("NBD"))?)
        }
        EngineConfig::Iscsi => user.run(IscsiEngine::new(setup).map_err(setup_err("iSCSI"))?),
        EngineConfig::NvmeTcp(net) => {
            user.run(NvmeTcpEngine::with_options(setup, *net).map_err(setup_err("NVMe/TCP"))?)
        }
        EngineConfig::NvmeRdma => user.run(
            super::nvmerdma::engine::NvmeRdmaEngine::new(setup).map_err(setup_err("NVMe/RDMA"))?,
        ),
        EngineConfig::Fake(script) => {
            let Some(vc) = as_virtual(clock) else {
                return Err(WorkerError::Prepare {
                    what: "the fake engine",
                    source: anyhow::anyhow!("it needs the virtual clock"),
                });
            };
            user.run(FakeEngine::new(script.clone(), setup.depth, vc))
        }
    })
}

fn as_virtual<C: Clock>(clock: &C) -> Option<VirtualClock> {
    (clock as &dyn std::any::Any)
        .downcast_ref::<VirtualClock>()
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineTarget;
    use crate::measure::clock::MonoClock;
    use crate::plan::engines::UringOptions;

    struct Name;
    impl EngineUser for Name {
        type Output = &'static str;
        fn run<E: Engine>(self, _engine: E) -> &'static str {
            std::any::type_name::<E>()
        }
    }

    fn nothing() -> EngineSetup {
        EngineSetup {
            target: EngineTarget::Nothing { size: 1 << 20 },
            depth: 4,
            pool_base: std::ptr::null_mut(),
            pool_len: 0,
        }
    }

    #[test]
    fn builds_the_engine_the_config_names() {
        let n = with_engine(&EngineConfig::Null, &nothing(), &MonoClock, Name).unwrap();
        assert!(n.ends_with("NullEngine"), "{n}");
        let vc = VirtualClock::new(0);
        let f = EngineConfig::Fake(Default::default());
        let n = with_engine(&f, &nothing(), &vc, Name).unwrap();
        assert!(n.ends_with("FakeEngine"), "{n}");
    }

    #[test]
    fn a_local_engine_without_a_descriptor_cannot_be_set_up() {
        for c in [
            EngineConfig::Psync,
            EngineConfig::Aio,
            EngineConfig::IoUring(UringOptions::default()),
        ] {
            let e = with_engine(&c, &nothing(), &MonoClock, Name).unwrap_err();
            assert!(matches!(e, WorkerError::Setup { .. }), "{e}");
            assert!(e.point_cannot_run());
            assert!(e.to_string().contains("needs a local file"), "{e}");
        }
        let e = with_engine(&EngineConfig::Mmap, &nothing(), &MonoClock, Name).unwrap_err();
        assert!(e.to_string().starts_with("cannot map the target"), "{e}");
        let e = with_engine(
            &EngineConfig::Fake(Default::default()),
            &nothing(),
            &MonoClock,
            Name,
        )
        .unwrap_err();
        assert!(!e.point_cannot_run(), "{e}");
    }
}
