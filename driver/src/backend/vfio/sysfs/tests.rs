//! `locate` against sysfs trees built in a temporary directory: each way a system is not
//! ready gives its own error, and a ready one gives the group and the mode.

use super::*;
use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicU32, Ordering};

/// A fake root: `/sys/bus/pci/devices`, `/sys/kernel/iommu_groups`, `/dev/vfio`; removed on
/// drop.
struct Tree(PathBuf);

impl Tree {
    fn new() -> Tree {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mlx5-vfio-sysfs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["sys/bus/pci/devices", "sys/bus/pci/drivers", "dev/vfio"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        Tree(dir)
    }

    /// A function with these ids, bound to `driver`, in `group`.
    fn function(&self, addr: &str, vendor: u16, driver: Option<&str>, group: Option<u32>) {
        let dev = self.0.join("sys/bus/pci/devices").join(addr);
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("vendor"), format!("0x{vendor:04x}\n")).unwrap();
        std::fs::write(dev.join("device"), "0x1017\n").unwrap();
        if let Some(d) = driver {
            let drv = self.0.join("sys/bus/pci/drivers").join(d);
            std::fs::create_dir_all(&drv).unwrap();
            symlink(&drv, dev.join("driver")).unwrap();
        }
        if let Some(g) = group {
            let gdir = self.0.join(format!("sys/kernel/iommu_groups/{g}"));
            std::fs::create_dir_all(gdir.join("devices")).unwrap();
            symlink(&gdir, dev.join("iommu_group")).unwrap();
            symlink(&dev, gdir.join("devices").join(addr)).unwrap();
        }
    }

    fn node(&self, name: &str) {
        std::fs::write(self.0.join("dev/vfio").join(name), "").unwrap();
    }

    fn locate(&self, addr: &str) -> Result<Location, VfioError> {
        locate(&self.0, addr.parse().unwrap())
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const A: &str = "0000:03:00.0";

#[test]
fn a_ready_function_with_an_iommu() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(14));
    // Another member of the group, unbound, does not matter.
    t.function("0000:03:00.1", 0x15b3, None, Some(14));
    t.node("14");
    let l = t.locate(A).unwrap();
    assert_eq!(
        (l.group, l.mode, l.device_id),
        (14, IommuMode::Iommu, 0x1017)
    );
    assert_eq!(l.group_node, t.0.join("dev/vfio/14"));
    assert_eq!(l.sysfs, t.0.join("sys/bus/pci/devices").join(A));
}

#[test]
fn a_ready_function_without_an_iommu() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(0));
    t.node("noiommu-0");
    let l = t.locate(A).unwrap();
    assert_eq!((l.group, l.mode), (0, IommuMode::NoIommu));
}

#[test]
fn no_such_function() {
    let t = Tree::new();
    let e = t.locate(A).unwrap_err();
    assert!(matches!(e, VfioError::NoSuchDevice { .. }), "{e}");
    assert!(e.to_string().contains("lspci -D -d 15b3:"), "{e}");
}

#[test]
fn not_a_connectx_function() {
    let t = Tree::new();
    t.function(A, 0x8086, Some("vfio-pci"), Some(3));
    let e = t.locate(A).unwrap_err();
    assert!(e.to_string().contains("vendor 0x8086"), "{e}");
}

#[test]
fn bound_to_mlx5_core_or_to_nothing() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("mlx5_core"), Some(3));
    let e = t.locate(A).unwrap_err().to_string();
    assert!(e.contains("bound to mlx5_core, not to vfio-pci"), "{e}");
    assert!(
        e.contains(&format!(
            "echo {A} > /sys/bus/pci/devices/{A}/driver/unbind"
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "echo vfio-pci > /sys/bus/pci/devices/{A}/driver_override"
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!("echo {A} > /sys/bus/pci/drivers_probe")),
        "{e}"
    );

    let t = Tree::new();
    t.function(A, 0x15b3, None, Some(3));
    let e = t.locate(A).unwrap_err().to_string();
    assert!(e.contains("bound to no driver"), "{e}");
    assert!(!e.contains("unbind"), "nothing to unbind: {e}");
}

#[test]
fn no_iommu_group() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), None);
    let e = t.locate(A).unwrap_err();
    assert!(matches!(e, VfioError::NoIommuGroup { .. }), "{e}");
    assert!(
        e.to_string().contains("enable_unsafe_noiommu_mode=1"),
        "{e}"
    );
}

#[test]
fn a_group_shared_with_a_host_driver() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(7));
    t.function("0000:03:00.1", 0x15b3, Some("mlx5_core"), Some(7));
    t.function("0000:00:1c.0", 0x8086, Some("pcieport"), Some(7));
    t.node("7");
    let e = t.locate(A).unwrap_err();
    match &e {
        VfioError::GroupNotViable { group, others, .. } => {
            assert_eq!(*group, 7);
            assert_eq!(
                others,
                &[
                    ("0000:00:1c.0".to_owned(), "pcieport".to_owned()),
                    ("0000:03:00.1".to_owned(), "mlx5_core".to_owned()),
                ]
            );
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("0000:03:00.1 (mlx5_core)"), "{e}");
}

#[test]
fn vfio_pci_not_loaded() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(5));
    let e = t.locate(A).unwrap_err();
    assert!(matches!(e, VfioError::NoGroupNode { group: 5, .. }), "{e}");
    assert!(e.to_string().contains("modprobe vfio-pci"), "{e}");
}

#[test]
fn garbage_in_sysfs_is_an_error_not_a_panic() {
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(5));
    let dev = t.0.join("sys/bus/pci/devices").join(A);
    std::fs::write(dev.join("vendor"), "mellanox\n").unwrap();
    let e = t.locate(A).unwrap_err().to_string();
    assert!(e.contains("not a 16-bit hex id"), "{e}");
    std::fs::write(dev.join("vendor"), "0x15b3\n").unwrap();
    std::fs::remove_file(dev.join("iommu_group")).unwrap();
    symlink("/nowhere/not-a-number", dev.join("iommu_group")).unwrap();
    let e = t.locate(A).unwrap_err().to_string();
    assert!(e.contains("names group 'not-a-number'"), "{e}");
}

#[test]
fn the_real_sysfs_has_no_function_at_an_unused_address() {
    // On any machine: domain ffff is not used by real buses.
    let e = locate(Path::new("/"), "ffff:ff:1f.7".parse().unwrap()).unwrap_err();
    assert!(matches!(e, VfioError::NoSuchDevice { .. }), "{e}");
}

/// Past the sysfs checks, opening goes to the VFIO nodes: a container node that is missing or
/// is not VFIO's (a plain file here, as a wrong bind mount would show) ends in an error that
/// names the node and the request, not a panic.
#[test]
fn opening_with_nodes_that_are_not_vfio_is_an_error() {
    use crate::backend::vfio::VfioBackend;
    let t = Tree::new();
    t.function(A, 0x15b3, Some("vfio-pci"), Some(14));
    t.node("14");
    let e = VfioBackend::open_at(&t.0, A.parse().unwrap()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("dev/vfio/vfio") && text.contains("No such file"),
        "{text}"
    );
    t.node("vfio");
    let e = VfioBackend::open_at(&t.0, A.parse().unwrap()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("VFIO_GET_API_VERSION on") && text.contains("ENOTTY"),
        "{text}"
    );
}
