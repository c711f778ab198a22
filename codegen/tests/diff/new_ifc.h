/* A small header in the style of mlx5_ifc.h for `prmc diff`'s tests (NEW side: counter narrowed, a field added in reserved space). */
struct mlx5_ifc_toy_counter_bits {
	u8         valid[0x1];
	u8         reserved_at_1[0xf];
	u8         counter[0x10];

	u8         limit[0x10];
	u8         reserved_at_30[0x10];
};

struct mlx5_ifc_toy_query_out_bits {
	u8         status[0x8];
	u8         reserved_at_8[0x18];

	struct mlx5_ifc_toy_counter_bits first;
	struct mlx5_ifc_toy_counter_bits second;
};
