//! Where ext4 keeps a file's inode on the device: the superblock and the group descriptors,
//! read from the device, give each block group's inode table, and an inode number its byte
//! there.
//!
//! Why: on the test bed's card the boot's opens make ext4 read 128 KiB of inode table
//! (`inode_readahead_blks`) wherever the inode's block is not cached: 17 MB in 139 reads of a
//! relocated boot, while the pack's 432 files have their inodes in 373 blocks
//! (testbed/results/README.md, "Where the relocated boot's drive time goes"). Relocation moves data, not inodes, so what is left to read
//! early is those blocks, which this module finds. Metadata buffers live in the block
//! device's page cache, so reading the device there fills the cache ext4 looks in.
//!
//! [`crate::metadata`] lists those blocks for replay to read first.
//!
//! Layout facts (Linux `Documentation/filesystems/ext4/`, "Super Block", "Block Group
//! Descriptors", "Finding an Inode"): the superblock is at byte 1024; the group descriptor
//! table starts in the block after the one holding it; inode `n` is entry `(n - 1) %
//! inodes_per_group` of group `(n - 1) / inodes_per_group`'s table. Only the layout without
//! `meta_bg` is read (mke2fs's default; with it the descriptors are spread over the disk).

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::pack::Range;

/// Where an ext2/3/4 superblock starts on its device.
pub(crate) const SUPERBLOCK_AT: u64 = 1024;
const SUPERBLOCK_LEN: usize = 1024;
/// `s_magic`, at byte 0x38 of the superblock.
pub(crate) const EXT4_MAGIC: u16 = 0xEF53;
const INCOMPAT_META_BG: u32 = 0x10;
const INCOMPAT_64BIT: u32 = 0x80;

/// What locating inodes needs of one ext2/3/4 filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// Block size in bytes.
    pub block_size: u64,
    /// Inodes per block group.
    pub inodes_per_group: u32,
    /// Bytes per inode record.
    pub inode_size: u16,
    /// Per block group, the first block of its inode table.
    pub inode_tables: Vec<u64>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

impl Geometry {
    /// Reads the geometry from `dev` (a block device or an image of one filesystem).
    pub fn read(dev: &File) -> Result<Geometry, String> {
        let mut sb = vec![0u8; SUPERBLOCK_LEN];
        dev.read_exact_at(&mut sb, SUPERBLOCK_AT)
            .map_err(|e| format!("reading the superblock: {e}"))?;
        let f = Fields::of(&sb)?;
        let (at, len) = (f.table_at(), f.table_len());
        let mut table = vec![0u8; len];
        dev.read_exact_at(&mut table, at)
            .map_err(|e| format!("reading the group descriptors ({len} bytes at {at}): {e}"))?;
        Geometry::from_fields(&f, &table)
    }

    /// Where the group descriptor table lies, byte offset and length, from the superblock.
    pub fn descriptor_table(sb: &[u8]) -> Result<(u64, usize), String> {
        let f = Fields::of(sb)?;
        Ok((f.table_at(), f.table_len()))
    }

    /// The geometry from the superblock's 1024 bytes and the group descriptor table (at least
    /// the bytes [`Geometry::descriptor_table`] names).
    pub fn parse(sb: &[u8], table: &[u8]) -> Result<Geometry, String> {
        Geometry::from_fields(&Fields::of(sb)?, table)
    }

    fn from_fields(f: &Fields, table: &[u8]) -> Result<Geometry, String> {
        let groups = f.groups() as usize;
        if table.len() < f.table_len() {
            return Err(format!(
                "{} bytes of group descriptors, expected {} ({groups} groups of {})",
                table.len(),
                groups * f.desc_size,
                f.desc_size
            ));
        }
        let inode_tables = table
            .chunks_exact(f.desc_size)
            .take(groups)
            .map(|d| {
                let lo = u64::from(u32_at(d, 0x08));
                let hi = if f.desc_size >= 64 {
                    u64::from(u32_at(d, 0x28))
                } else {
                    0
                };
                hi << 32 | lo
            })
            .collect();
        Ok(Geometry {
            block_size: f.block_size,
            inodes_per_group: f.inodes_per_group,
            inode_size: f.inode_size,
            inode_tables,
        })
    }

    /// The byte on the device where inode `ino`'s record starts; `None` for 0 or an inode
    /// past the last group.
    pub fn inode_offset(&self, ino: u64) -> Option<u64> {
        let i = ino.checked_sub(1)?;
        let ipg = u64::from(self.inodes_per_group);
        let table = *self.inode_tables.get(usize::try_from(i / ipg).ok()?)?;
        Some(table * self.block_size + (i % ipg) * u64::from(self.inode_size))
    }

    /// The device blocks that hold the inodes `inos`, as byte ranges: ascending, each block
    /// once, adjacent blocks joined.
    pub fn inode_blocks(&self, inos: impl IntoIterator<Item = u64>) -> Vec<Range> {
        let bs = self.block_size;
        let mut blocks: Vec<u64> = inos
            .into_iter()
            .filter_map(|ino| self.inode_offset(ino))
            .map(|off| off / bs)
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        let mut out: Vec<Range> = Vec::new();
        for b in blocks {
            match out.last_mut() {
                Some(r) if r.end() == b * bs => r.len += bs,
                _ => out.push(Range {
                    offset: b * bs,
                    len: bs,
                }),
            }
        }
        out
    }
}

/// The superblock's fields this module uses, checked.
struct Fields {
    block_size: u64,
    first_data_block: u64,
    blocks: u64,
    blocks_per_group: u64,
    inodes_per_group: u32,
    inode_size: u16,
    desc_size: usize,
}

impl Fields {
    fn of(sb: &[u8]) -> Result<Fields, String> {
        if sb.len() < SUPERBLOCK_LEN {
            return Err(format!(
                "superblock of {} bytes, expected {SUPERBLOCK_LEN}",
                sb.len()
            ));
        }
        let magic = u16_at(sb, 0x38);
        if magic != EXT4_MAGIC {
            return Err(format!(
                "superblock magic {magic:#06x}, expected {EXT4_MAGIC:#06x} (not ext2/3/4)"
            ));
        }
        let log_block = u32_at(sb, 0x18);
        if log_block > 6 {
            return Err(format!(
                "block size 1024 << {log_block}, expected at most 64 KiB"
            ));
        }
        let incompat = u32_at(sb, 0x60);
        if incompat & INCOMPAT_META_BG != 0 {
            return Err("meta_bg: the group descriptors are spread over the disk".into());
        }
        let wide = incompat & INCOMPAT_64BIT != 0;
        let desc_size = if wide {
            usize::from(u16_at(sb, 0xFE))
        } else {
            32
        };
        if !(32..=1024).contains(&desc_size) || !desc_size.is_power_of_two() {
            return Err(format!(
                "group descriptor size {desc_size}, expected 32-1024"
            ));
        }
        // Revision 0 has 128-byte inodes and no s_inode_size.
        let inode_size = if u32_at(sb, 0x4C) == 0 {
            128
        } else {
            u16_at(sb, 0x58)
        };
        let inodes_per_group = u32_at(sb, 0x28);
        let blocks_per_group = u64::from(u32_at(sb, 0x20));
        if inode_size < 128 || !inode_size.is_power_of_two() || inodes_per_group == 0 {
            return Err(format!(
                "inode size {inode_size}, {inodes_per_group} inodes per group: not a valid ext4"
            ));
        }
        if blocks_per_group == 0 {
            return Err("0 blocks per group: not a valid ext4".into());
        }
        let hi = if wide {
            u64::from(u32_at(sb, 0x150))
        } else {
            0
        };
        Ok(Fields {
            block_size: 1024 << log_block,
            first_data_block: u64::from(u32_at(sb, 0x14)),
            blocks: hi << 32 | u64::from(u32_at(sb, 0x04)),
            blocks_per_group,
            inodes_per_group,
            inode_size,
            desc_size,
        })
    }

    fn groups(&self) -> u64 {
        self.blocks
            .saturating_sub(self.first_data_block)
            .div_ceil(self.blocks_per_group)
    }

    /// The descriptor table is in the block after the superblock's.
    fn table_at(&self) -> u64 {
        (self.first_data_block + 1) * self.block_size
    }

    fn table_len(&self) -> usize {
        self.groups() as usize * self.desc_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A superblock of `blocks` 4 KiB blocks, 32768 per group, 8192 inodes of 256 bytes
    /// per group, 64-bit descriptors of 64 bytes.
    fn superblock(blocks: u64) -> Vec<u8> {
        let mut sb = vec![0u8; 1024];
        sb[0x04..0x08].copy_from_slice(&(blocks as u32).to_le_bytes());
        sb[0x150..0x154].copy_from_slice(&((blocks >> 32) as u32).to_le_bytes());
        sb[0x18..0x1C].copy_from_slice(&2u32.to_le_bytes());
        sb[0x20..0x24].copy_from_slice(&32768u32.to_le_bytes());
        sb[0x28..0x2C].copy_from_slice(&8192u32.to_le_bytes());
        sb[0x38..0x3A].copy_from_slice(&EXT4_MAGIC.to_le_bytes());
        sb[0x4C..0x50].copy_from_slice(&1u32.to_le_bytes());
        sb[0x58..0x5A].copy_from_slice(&256u16.to_le_bytes());
        sb[0x60..0x64].copy_from_slice(&INCOMPAT_64BIT.to_le_bytes());
        sb[0xFE..0x100].copy_from_slice(&64u16.to_le_bytes());
        sb
    }

    fn table(inode_tables: &[u64]) -> Vec<u8> {
        let mut t = vec![0u8; 64 * inode_tables.len()];
        for (d, &b) in t.chunks_exact_mut(64).zip(inode_tables) {
            d[0x08..0x0C].copy_from_slice(&(b as u32).to_le_bytes());
            d[0x28..0x2C].copy_from_slice(&((b >> 32) as u32).to_le_bytes());
        }
        t
    }

    #[test]
    fn inodes_are_found_in_their_groups_table() {
        let sb = superblock(3 * 32768 + 100);
        assert_eq!(Geometry::descriptor_table(&sb).unwrap(), (4096, 4 * 64));
        let g = Geometry::parse(&sb, &table(&[1000, 1512, 1 << 33, 2536])).unwrap();
        assert_eq!(g.inode_tables.len(), 4);
        assert_eq!(g.inode_offset(0), None);
        assert_eq!(g.inode_offset(1), Some(1000 * 4096));
        assert_eq!(g.inode_offset(17), Some(1000 * 4096 + 16 * 256));
        assert_eq!(g.inode_offset(8193), Some(1512 * 4096));
        // The high half of a 64-bit descriptor counts.
        assert_eq!(g.inode_offset(2 * 8192 + 1), Some((1u64 << 33) * 4096));
        assert_eq!(g.inode_offset(4 * 8192 + 1), None);
    }

    #[test]
    fn blocks_are_sorted_once_and_joined() {
        let sb = superblock(32768);
        let g = Geometry::parse(&sb, &table(&[100])).unwrap();
        // 16 inodes of 256 bytes per block: 1 and 16 share block 100; 17 is 101; 33 is 102;
        // 200 is 112.
        let r = g.inode_blocks([200, 1, 16, 17, 33, 1]);
        assert_eq!(
            r,
            vec![
                Range {
                    offset: 100 * 4096,
                    len: 3 * 4096
                },
                Range {
                    offset: 112 * 4096,
                    len: 4096
                }
            ]
        );
    }

    #[test]
    fn what_it_cannot_read_is_named() {
        let mut sb = superblock(32768);
        sb[0x38] = 0;
        assert!(Geometry::descriptor_table(&sb)
            .unwrap_err()
            .contains("not ext2/3/4"));
        let mut sb = superblock(32768);
        sb[0x60] |= INCOMPAT_META_BG as u8;
        assert!(Geometry::parse(&sb, &table(&[100]))
            .unwrap_err()
            .contains("meta_bg"));
        let sb = superblock(2 * 32768);
        let e = Geometry::parse(&sb, &table(&[100])).unwrap_err();
        assert!(
            e.contains("64 bytes of group descriptors, expected 128"),
            "{e}"
        );
        assert!(Geometry::parse(&sb[..100], &[]).is_err());
    }

    #[test]
    fn small_descriptors_without_64bit() {
        let mut sb = superblock(2 * 32768);
        sb[0x60..0x64].copy_from_slice(&0u32.to_le_bytes());
        sb[0x150..0x154].copy_from_slice(&7u32.to_le_bytes()); // ignored without 64bit
        let mut t = vec![0u8; 64];
        t[0x08..0x0C].copy_from_slice(&50u32.to_le_bytes());
        t[0x20 + 0x08..0x20 + 0x0C].copy_from_slice(&60u32.to_le_bytes());
        let g = Geometry::parse(&sb, &t).unwrap();
        assert_eq!(g.inode_tables, [50, 60]);
    }
}
