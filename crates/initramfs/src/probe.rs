//! Identifying block devices without udev or libblkid: a file system's type, UUID and label
//! from its superblock (ext2/3/4, XFS, btrfs), and a partition's PARTUUID and PARTLABEL from
//! its disk's partition table (MBR, GPT). Pure parsing of bytes read from the device; offsets
//! from the on-disk format documentation of each (ext4's `struct ext4_super_block`, XFS's
//! `xfs_sb`, btrfs's `btrfs_super_block`, the UEFI specification's GPT header and entry).

/// What a superblock says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FsInfo {
    /// The type the kernel mounts it as (`ext4`, `xfs`, `btrfs`).
    pub fstype: String,
    /// The UUID, lower-case with dashes.
    pub uuid: String,
    /// The label (empty if none).
    pub label: String,
}

/// How many bytes of a device [`superblock`] wants (btrfs's lies at 64 KiB).
pub const PROBE_BYTES: usize = 0x10000 + 0x1000;

fn uuid_string(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn label_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The file system at the start of `dev` (its first [`PROBE_BYTES`] bytes, or fewer).
pub fn superblock(dev: &[u8]) -> Option<FsInfo> {
    // ext2/3/4: superblock at 1024, s_magic 0xEF53 at +0x38, s_uuid at +0x68, s_volume_name
    // at +0x78 (16 bytes).
    if let Some(sb) = dev.get(1024..1024 + 0x100) {
        if sb[0x38..0x3a] == [0x53, 0xef] {
            return Some(FsInfo {
                fstype: "ext4".into(),
                uuid: uuid_string(&sb[0x68..0x78]),
                label: label_string(&sb[0x78..0x88]),
            });
        }
    }
    // XFS: "XFSB" at 0, sb_uuid at 32, sb_fname (12 bytes) at 108.
    if dev.get(0..4) == Some(b"XFSB") && dev.len() >= 120 {
        return Some(FsInfo {
            fstype: "xfs".into(),
            uuid: uuid_string(&dev[32..48]),
            label: label_string(&dev[108..120]),
        });
    }
    // btrfs: superblock at 64 KiB; fsid at +0x20, magic "_BHRfS_M" at +0x40, label at +0x12b.
    if let Some(sb) = dev.get(0x10000..0x10000 + 0x22b) {
        if &sb[0x40..0x48] == b"_BHRfS_M" {
            return Some(FsInfo {
                fstype: "btrfs".into(),
                uuid: uuid_string(&sb[0x20..0x30]),
                label: label_string(&sb[0x12b..0x22b]),
            });
        }
    }
    None
}

/// A partition's identity from its disk's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    /// PARTUUID as the kernel prints it: `SSSSSSSS-NN` for MBR, the GUID for GPT.
    pub partuuid: String,
    /// The GPT partition name (empty for MBR).
    pub partlabel: String,
}

/// Partition `number` (1-based) of the disk whose first sectors are `disk` (enough of them
/// to hold the GPT entries: [`PART_BYTES`]), with `sector` bytes a sector.
pub fn partition(disk: &[u8], number: u32, sector: usize) -> Option<PartInfo> {
    let gpt = disk
        .get(sector..sector + 92)
        .filter(|h| &h[..8] == b"EFI PART");
    if let Some(h) = gpt {
        let lba = u64::from_le_bytes(h[72..80].try_into().ok()?) as usize;
        let count = u32::from_le_bytes(h[80..84].try_into().ok()?);
        let size = u32::from_le_bytes(h[84..88].try_into().ok()?) as usize;
        if number == 0 || number > count || size < 128 {
            return None;
        }
        // Checked: the header's fields are the disk's, any value; a wrapped offset would
        // read some other bytes as the entry.
        let o = lba
            .checked_mul(sector)?
            .checked_add((number as usize - 1).checked_mul(size)?)?;
        let e = disk.get(o..o.checked_add(128)?)?;
        if e[..16].iter().all(|&b| b == 0) {
            return None;
        }
        // GUIDs store their first three fields little-endian.
        let g = &e[16..32];
        let partuuid = format!(
            "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{}",
            g[3],
            g[2],
            g[1],
            g[0],
            g[5],
            g[4],
            g[7],
            g[6],
            g[8],
            g[9],
            g[10..16]
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect::<String>()
        );
        let units: Vec<u16> = e[56..128]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        return Some(PartInfo {
            partuuid,
            partlabel: String::from_utf16_lossy(&units),
        });
    }
    let mbr = disk.get(0..512)?;
    if mbr[510..512] != [0x55, 0xaa] || number == 0 {
        return None;
    }
    let sig = u32::from_le_bytes(mbr[440..444].try_into().ok()?);
    Some(PartInfo {
        partuuid: format!("{sig:08x}-{number:02x}"),
        partlabel: String::new(),
    })
}

/// Bytes of a disk [`partition`] reads: the GPT header and 128 entries of 128 bytes, at
/// 4 KiB sectors.
pub const PART_BYTES: usize = 4096 * 2 + 128 * 128;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_superblock() {
        let mut d = vec![0u8; 4096];
        d[1024 + 0x38] = 0x53;
        d[1024 + 0x39] = 0xef;
        let uuid = [
            0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7,
            0xe8, 0xf9,
        ];
        d[1024 + 0x68..1024 + 0x78].copy_from_slice(&uuid);
        d[1024 + 0x78..1024 + 0x7e].copy_from_slice(b"rootfs");
        let i = superblock(&d).unwrap();
        assert_eq!(i.fstype, "ext4");
        assert_eq!(i.uuid, "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9");
        assert_eq!(i.label, "rootfs");
        assert_eq!(superblock(&[0u8; 4096]), None);
    }

    #[test]
    fn real_ext4_image_when_mke2fs_is_present() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let img = dir.join("fs.img");
        let st = std::process::Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-L", "bp-root", "-U"])
            .arg("6f1e2d3c-4b5a-4968-8776-655443322110")
            .arg(&img)
            .arg("4M")
            .status();
        if !matches!(st, Ok(s) if s.success()) {
            testkit::skip("no mke2fs");
            return;
        }
        let bytes = std::fs::read(&img).unwrap();
        let i = superblock(&bytes[..PROBE_BYTES]).unwrap();
        assert_eq!(i.uuid, "6f1e2d3c-4b5a-4968-8776-655443322110");
        assert_eq!(i.label, "bp-root");
    }

    #[test]
    fn mbr_and_gpt_partuuids() {
        let mut d = vec![0u8; PART_BYTES];
        d[440..444].copy_from_slice(&0x1234abcdu32.to_le_bytes());
        d[510] = 0x55;
        d[511] = 0xaa;
        assert_eq!(partition(&d, 2, 512).unwrap().partuuid, "1234abcd-02");
        // GPT: header at LBA 1, entries at LBA 2.
        d[512..520].copy_from_slice(b"EFI PART");
        d[512 + 72..512 + 80].copy_from_slice(&2u64.to_le_bytes());
        d[512 + 80..512 + 84].copy_from_slice(&128u32.to_le_bytes());
        d[512 + 84..512 + 88].copy_from_slice(&128u32.to_le_bytes());
        let e = 1024 + 128; // the second entry
        d[e] = 1; // a non-zero type GUID
        let guid = [
            0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ];
        d[e + 16..e + 32].copy_from_slice(&guid);
        for (i, c) in "root".encode_utf16().enumerate() {
            d[e + 56 + 2 * i..e + 58 + 2 * i].copy_from_slice(&c.to_le_bytes());
        }
        let p = partition(&d, 2, 512).unwrap();
        assert_eq!(p.partuuid, "00112233-4455-6677-8899-aabbccddeeff");
        assert_eq!(p.partlabel, "root");
        assert_eq!(partition(&d, 1, 512), None, "an empty entry");
    }
}
