//! The VFIO ioctls the backend uses, as nix functions over `vfio-bindings`' structures.
//!
//! VFIO numbers every request `_IO(';', 100 + n)`: none encodes its argument's size (the
//! structures carry their own `argsz`), so each is declared with nix's `_bad` macros. All are
//! `unsafe`: the caller passes a descriptor of the right kind and a live argument.

use nix::{ioctl_none_bad, ioctl_readwrite_bad, ioctl_write_int_bad, ioctl_write_ptr_bad};
use vfio_bindings::bindings::vfio::{
    vfio_device_info, vfio_group_status, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap,
    vfio_irq_info, vfio_irq_set, vfio_region_info,
};

/// `_IO(VFIO_TYPE, VFIO_BASE + n)`.
macro_rules! vfio_req {
    ($n:expr) => {
        ::nix::request_code_none!(
            ::vfio_bindings::bindings::vfio::VFIO_TYPE,
            ::vfio_bindings::bindings::vfio::VFIO_BASE + $n
        )
    };
}

// Container (/dev/vfio/vfio).
ioctl_none_bad!(get_api_version, vfio_req!(0));
ioctl_write_int_bad!(check_extension, vfio_req!(1));
ioctl_write_int_bad!(set_iommu, vfio_req!(2));
// Group (/dev/vfio/N).
ioctl_readwrite_bad!(group_get_status, vfio_req!(3), vfio_group_status);
ioctl_write_ptr_bad!(group_set_container, vfio_req!(4), libc_int);
ioctl_write_ptr_bad!(group_get_device_fd, vfio_req!(6), libc_char);
// Device.
ioctl_readwrite_bad!(device_get_info, vfio_req!(7), vfio_device_info);
ioctl_readwrite_bad!(device_get_region_info, vfio_req!(8), vfio_region_info);
ioctl_readwrite_bad!(device_get_irq_info, vfio_req!(9), vfio_irq_info);
ioctl_write_ptr_bad!(device_set_irqs, vfio_req!(10), vfio_irq_set);
ioctl_none_bad!(device_reset, vfio_req!(11));
// Type-1 IOMMU (on the container).
ioctl_write_ptr_bad!(iommu_map_dma, vfio_req!(13), vfio_iommu_type1_dma_map);
ioctl_readwrite_bad!(iommu_unmap_dma, vfio_req!(14), vfio_iommu_type1_dma_unmap);

#[allow(non_camel_case_types)]
type libc_int = std::ffi::c_int;
#[allow(non_camel_case_types)]
type libc_char = std::ffi::c_char;

/// `argsz` of a fixed-size structure.
pub(crate) fn argsz<T>() -> u32 {
    // VFIO structures are a few dozen bytes.
    std::mem::size_of::<T>() as u32
}

#[cfg(test)]
mod tests {
    /// The request numbers as the kernel header defines them (`_IO(';', 100 + n)`:
    /// type 0x3b in bits 8..16, the number in bits 0..8, no size or direction).
    #[test]
    fn request_numbers_match_the_kernel() {
        assert_eq!(vfio_req!(0), 0x3b64); // VFIO_GET_API_VERSION
        assert_eq!(vfio_req!(6), 0x3b6a); // VFIO_GROUP_GET_DEVICE_FD
        assert_eq!(vfio_req!(11), 0x3b6f); // VFIO_DEVICE_RESET
        assert_eq!(vfio_req!(14), 0x3b72); // VFIO_IOMMU_UNMAP_DMA
    }
}
