// RST2INIT without one of the fields the spec's transition requires (`rre`).
use mlx5_prm::qp_machine::Rst2init;
use mlx5_prm::QpPmState;

fn main() {
    let _ = Rst2init {
        pkey_index: 0,
        vhca_port_num: 1,
        rwe: true,
        rae: false,
        pm_state: QpPmState::Migrated,
        counter_set_id: 0,
    };
}
