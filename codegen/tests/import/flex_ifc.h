/* Flexible arrays written with the kernel's DECLARE_FLEX_ARRAY macro, alone and as the
 * members of an anonymous union (two element types for one trailing list), written for the
 * importer's tests. */

struct mlx5_ifc_toy_entry_bits {
	u8         reserved_at_0[0x8];
	u8         id[0x18];
};

struct mlx5_ifc_toy_wide_entry_bits {
	u8         owner[0x10];
	u8         reserved_at_10[0x10];

	u8         reserved_at_20[0x8];
	u8         id[0x18];
};

struct mlx5_ifc_toy_table_bits {
	u8         reserved_at_0[0x10];
	u8         size[0x10];

	union {
		DECLARE_FLEX_ARRAY(struct mlx5_ifc_toy_entry_bits, entry);
		DECLARE_FLEX_ARRAY(struct mlx5_ifc_toy_wide_entry_bits, wide_entry);
	};
};

struct mlx5_ifc_toy_list_bits {
	u8         count[0x20];

	DECLARE_FLEX_ARRAY(struct mlx5_ifc_toy_entry_bits, item);
};

struct mlx5_ifc_toy_create_in_bits {
	u8         opcode[0x10];
	u8         reserved_at_10[0x10];

	struct mlx5_ifc_toy_table_bits table;
};

/* A structure with no fixed part, only a flexible array: it cannot be written, nor can a
 * union member of its type. */
struct mlx5_ifc_toy_only_entries_bits {
	struct mlx5_ifc_toy_entry_bits entry[0];
};

union mlx5_ifc_toy_tail_bits {
	struct mlx5_ifc_toy_only_entries_bits plain;
	struct mlx5_ifc_toy_list_bits counted;
};
