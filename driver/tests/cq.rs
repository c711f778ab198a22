//! Completion queues on the device model: created with the driver's ring and doorbell
//! record, seen by QUERY_CQ as the driver described them, armed and destroyed.

mod common;

use mlx5_driver::cq::Cq;
use mlx5_prm::cmd::QueryCq;
use mlx5_sim::Mode;

#[test]
fn create_query_arm_destroy() {
    let (hca, device) = common::up(Mode::Inline);
    let mut cq = Cq::create(&hca, 8).unwrap();
    assert_eq!(cq.capacity(), 256);
    let cqn = cq.cqn();
    let out = hca.query::<QueryCq>(0, |i| i.set_cqn(cqn)).unwrap();
    let ctx = out.cq_context();
    assert_eq!(ctx.log_cq_size(), 8);
    assert_eq!(ctx.c_eqn_or_apu_element(), u32::from(hca.info().eqn));
    assert_eq!(ctx.uar_page(), hca.info().uar);
    // Nothing completed yet: polling finds nothing and publishes nothing.
    let mut out = Vec::new();
    assert_eq!(cq.poll(16, &mut out), 0);
    cq.arm(false);
    assert!(cq.destroy().is_ok());
    assert_eq!(device.objects().cqs, 0);
    hca.teardown().unwrap();
    assert_eq!(device.pages_held(), 0);
    assert_eq!(device.dma().allocated(), 0);
}
