/* A small header in the style of mlx5_ifc.h for `prmc diff`'s tests (OLD side). */
struct mlx5_ifc_toy_counter_bits {
	u8         valid[0x1];
	u8         reserved_at_1[0x7];
	u8         counter[0x18];

	u8         reserved_at_20[0x20];
};

struct mlx5_ifc_toy_query_out_bits {
	u8         status[0x8];
	u8         reserved_at_8[0x18];

	struct mlx5_ifc_toy_counter_bits first;
	struct mlx5_ifc_toy_counter_bits second;
};
