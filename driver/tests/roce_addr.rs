//! The RoCE address table through the driver: entries written with `set_roce_address` read
//! back equal with `query_roce_address`, cleared entries read as empty, and a refusal is an
//! error naming the command, its status and the model's syndrome.

mod common;

use mlx5_driver::roce::{link_local_gid, RoceAddress, RoceVersion};
use mlx5_driver::Error;
use mlx5_prm::CmdStatus;
use mlx5_sim::{syndrome as syn, Mode};
use std::net::{IpAddr, Ipv4Addr};

#[test]
fn entries_round_trip_and_refusals_are_named() {
    let (hca, _dev) = common::up(Mode::Inline);
    let mac = [0x02, 0x4d, 0x4c, 0x58, 0x35, 0x10];
    let v6 = RoceAddress::v2(IpAddr::V6(link_local_gid(mac)), mac);
    let v4 = RoceAddress {
        ip: IpAddr::V4(Ipv4Addr::new(10, 99, 0, 2)),
        mac,
        vlan: Some(7),
        version: RoceVersion::Version2,
    };
    assert_eq!(hca.query_roce_address(0).unwrap(), None);
    hca.set_roce_address(0, &v6).unwrap();
    hca.set_roce_address(1, &v4).unwrap();
    assert_eq!(hca.query_roce_address(0).unwrap(), Some(v6));
    assert_eq!(hca.query_roce_address(1).unwrap(), Some(v4));
    assert_eq!(
        hca.query_roce_address(1).unwrap().unwrap().gid()[10..],
        [0xff, 0xff, 10, 99, 0, 2]
    );
    hca.clear_roce_address(1).unwrap();
    assert_eq!(hca.query_roce_address(1).unwrap(), None);
    assert_eq!(hca.query_roce_address(0).unwrap(), Some(v6));

    let e = hca.set_roce_address(256, &v4).unwrap_err();
    match &e {
        Error::Command {
            command,
            status,
            syndrome,
            ..
        } => {
            assert_eq!(*command, "set_roce_address");
            assert_eq!(*status, CmdStatus::BadParamErr.raw());
            assert_eq!(*syndrome, syn::ROCE_ADDR_BAD_INDEX);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("set_roce_address"), "{e}");
    // A VLAN ID wider than 12 bits is refused before anything is sent.
    let wide = RoceAddress {
        vlan: Some(0x1000),
        ..v4
    };
    let sent = hca.commands_run();
    assert!(matches!(
        hca.set_roce_address(2, &wide),
        Err(Error::Field(_))
    ));
    assert_eq!(hca.commands_run(), sent);
}
