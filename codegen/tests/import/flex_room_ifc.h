/* A flexible array that shares an anonymous union with reserved room (the pattern of 7.x's
 * query_esw_functions_out): the room fixes the structure's size, the array addresses a list
 * that starts there. Written for the importer's tests. */

struct mlx5_ifc_toy_pair_bits {
	u8         first[0x20];

	u8         second[0x20];
};

union mlx5_ifc_toy_pick_bits {
	struct mlx5_ifc_toy_pair_bits pair;
	u8         raw[0x40];
};

/* 0xa0 bits of room, 0x40-bit elements: two fit, 0x20 bits stay reserved. */
struct mlx5_ifc_toy_report_out_bits {
	u8         status[0x8];
	u8         reserved_at_8[0x18];

	u8         entries[0x20];

	union {
		u8 reserved_at_40[0xa0];
		DECLARE_FLEX_ARRAY(union mlx5_ifc_toy_pick_bits, picks);
	};
};

/* Room smaller than one element: nothing of the list fits, the room stays reserved. */
struct mlx5_ifc_toy_short_out_bits {
	u8         status[0x8];
	u8         reserved_at_8[0x18];

	union {
		u8 reserved_at_20[0x20];
		DECLARE_FLEX_ARRAY(struct mlx5_ifc_toy_pair_bits, pairs);
	};
};
