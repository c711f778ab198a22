//! One snapshot per layout the crate relies on (`RELIED_ON`): a change of any of them in
//! `mlx5-prm` fails here with a readable diff (`cargo insta review`).

#[test]
fn the_layouts_this_crate_relies_on_are_unchanged() {
    for layout in layout_snapshots::RELIED_ON {
        insta::assert_snapshot!(layout.name, layout.to_string());
    }
}
