/* A small header in the style of mlx5_ifc.h, written for the importer's tests. */
#ifndef TOY_IFC_H
#define TOY_IFC_H

#define TOY_NUM_COUNTERS (2 + \
			  1)

enum {
	TOY_CMD_OP_QUERY = 0x100,
};

struct mlx5_ifc_toy_hdr_bits {
	u8         opcode[0x10];
	u8         reserved_at_10[0x10];

	u8         reserved_at_20[0x10];
	u8         op_mod[0x10];
};

struct mlx5_ifc_toy_counter_bits {
	u8         valid[0x1];
	u8         reserved_at_1[0x7];
	u8         counter[0x18];
};

struct mlx5_ifc_toy_small_bits {
	u8         a[0x8];
	u8         b[0x8];
};

union mlx5_ifc_toy_cap_union_bits {
	struct mlx5_ifc_toy_counter_bits counter;
	u8         raw_word[0x20];
	u8         reserved_at_0[0x40];
};

struct mlx5_ifc_toy_query_in_bits {
	struct mlx5_ifc_toy_hdr_bits hdr;

	u8         Big_Flag[0x1];
	u8         reserved_at_41[0xf];
	u8         vlan[0x10];

	u8         mac[6][0x8];
	u8         nibbles[8][0x4];
	u8         reserved_at_b0[0x10];

	u8         addr[0x40];

	u8         odd_mask[0x2c];
	u8         reserved_at_12c[0x14];

	struct mlx5_ifc_toy_counter_bits counters[TOY_NUM_COUNTERS];

	union {
		struct mlx5_ifc_toy_counter_bits one;
		u8         reserved_at_0[0x40];
	} choice;

	struct {
		u8         inner_a[0x10];
		u8         inner_b[0x10];
	};

	struct mlx5_ifc_toy_small_bits smalls[2];

	union mlx5_ifc_toy_cap_union_bits cap;

	u8         pas[][0x40];
};

struct mlx5_ifc_toy_helper {
	__be32     not_a_layout;
};

struct mlx5_ifc_toy_broken_bits {
	u8         fine[0x20];
	int        nope;
};

#endif
