//! Completion queues on the device model: created with the driver's ring and doorbell
//! record, seen by QUERY_CQ as the driver described them, armed and destroyed.

use mlx5_driver::backend::sim::SimBackend;
use mlx5_driver::cq::Cq;
use mlx5_driver::{Hca, HcaConfig};
use mlx5_prm::cmd::QueryCq;
use mlx5_prm::QueryCqOut;

#[test]
fn create_query_arm_destroy() {
    let (backend, device) = SimBackend::new(mlx5_sim::Config::default());
    let mut hca = Hca::bring_up(backend, &HcaConfig::default()).unwrap();
    let eqn = hca.info().eqn;
    let mut cq = Cq::create(&mut hca, 8, eqn).unwrap();
    assert_eq!(cq.capacity(), 256);
    let cqn = cq.cqn();
    let out = hca
        .run_extra::<QueryCq>(0, 0, 0, |i| i.set_cqn(cqn))
        .unwrap();
    let q = QueryCqOut::new_checked(&out[..]).unwrap();
    let ctx = q.cq_context();
    assert_eq!(ctx.log_cq_size(), 8);
    assert_eq!(ctx.c_eqn_or_apu_element(), u32::from(eqn));
    assert_eq!(ctx.uar_page(), hca.info().uar);
    // Nothing completed yet: polling finds nothing and publishes nothing.
    let mut out = Vec::new();
    assert_eq!(cq.poll(hca.backend(), 16, &mut out), 0);
    cq.arm(hca.backend(), false);
    assert!(cq.destroy(&mut hca).is_ok());
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
    assert_eq!(device.dma().allocated(), 0);
}
