//! Many machines' boots seen from one machine (`bootprint fleet`, docs/fleet.md): each boot
//! reduced to a [`BootRecord`] as it is read (no trace is kept whole), gathered by machine in
//! a [`Fleet`], and judged in a [`FleetView`]: each machine's newest boot against its own
//! baseline ([`crate::baseline`], the rule the Prometheus export uses), the text login's
//! median and 95th percentile by kernel release and by model, and which services' start
//! times grew most (on a regressed machine, between kernel releases, between the older and
//! newer half of each machine's boots).

use std::collections::HashMap;

use serde::Serialize;

use crate::baseline::{self, Baseline};

/// At most this many services a boot record keeps, its slowest starts (as the Prometheus
/// export's `bootprint_service_seconds`): a bound on a record's size.
pub const SERVICES: usize = 10;
/// At most this many services a comparison lists, the most grown first.
pub const MOVED: usize = 5;

/// One boot, reduced to what the fleet view needs: a line of `bootprint fleet --export`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BootRecord {
    /// The boot's id (the header's `bootprint.boot_id`, else its directory's name): the same
    /// boot gathered twice counts once.
    pub boot_id: String,
    /// Its place in the machine's history (the trace's `seq`; none sorts first).
    pub seq: Option<u64>,
    /// `uname -r` of the boot.
    pub kernel_release: Option<String>,
    /// The machine's maker and model from DMI (`bootprint.dmi_vendor`, `dmi_product`).
    pub vendor: Option<String>,
    /// See `vendor`.
    pub product: Option<String>,
    /// Text login, seconds since the kernel started.
    pub text_login_s: Option<f64>,
    /// Boot done, seconds since the kernel started.
    pub boot_done_s: Option<f64>,
    /// Up to [`SERVICES`] slowest service starts, seconds, the slowest first.
    pub services: Vec<(String, f64)>,
}

impl BootRecord {
    /// A boot's record from its header (kernel release, DMI), its one-line summary and its
    /// services' start times ([`crate::services::ServicesView::start_times`]; any order).
    pub fn new(
        boot_id: String,
        seq: Option<u64>,
        header: &[(String, String)],
        summary: &crate::summary::Summary,
        mut services: Vec<(String, f64)>,
    ) -> BootRecord {
        let get = |k: &str| {
            header
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        services.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        services.truncate(SERVICES);
        BootRecord {
            boot_id,
            seq,
            kernel_release: summary.kernel_release.clone(),
            vendor: get("bootprint.dmi_vendor"),
            product: get("bootprint.dmi_product"),
            text_login_s: summary.text_login_s,
            boot_done_s: summary.boot_done_s,
            services,
        }
    }
}

/// Strings held once (kernel releases, models, service names repeat across 10,000 boots).
#[derive(Debug, Default)]
struct Names {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(id) = self.ids.get(s) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    fn get(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// A boot as the fleet keeps it: a few numbers and ids (about 150 bytes).
#[derive(Debug)]
struct Boot {
    boot_id: Box<str>,
    seq: Option<u64>,
    release: Option<u32>,
    model: Option<u32>,
    text_login_s: Option<f64>,
    boot_done_s: Option<f64>,
    services: Box<[(u32, f64)]>,
}

/// The boots read so far, by machine.
#[derive(Debug, Default)]
pub struct Fleet {
    names: Names,
    machines: HashMap<String, Vec<Boot>>,
    boots: usize,
}

/// A machine's newest boot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineView {
    /// The machine's name (docs/fleet.md, "Machines").
    pub machine: String,
    /// Its boots read (each boot id once).
    pub boots: usize,
    /// The newest boot's id.
    pub boot_id: String,
    /// The newest boot's kernel release.
    pub kernel_release: Option<String>,
    /// The newest boot's model: vendor and product.
    pub model: Option<String>,
    /// The newest boot's text login, s.
    pub text_login_s: Option<f64>,
    /// The newest boot's boot done, s.
    pub boot_done_s: Option<f64>,
    /// The text login against the machine's own baseline.
    pub text_login_baseline: Option<Baseline>,
    /// Boot done against the machine's own baseline.
    pub boot_done_baseline: Option<Baseline>,
    /// The newest boots, at least the asked number in a row, were over their baselines.
    pub regressed: bool,
    /// When regressed: the services that grew most, the regressed boots' median against the
    /// boots' before them.
    pub moved: Vec<Moved>,
}

/// One group of machines' newest text logins.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The kernel release or the model (`unknown` when the boots do not say).
    pub key: String,
    /// Machines in the group with a text login.
    pub machines: usize,
    /// Median, s (interpolated as Prometheus' `quantile`).
    pub p50_s: f64,
    /// 95th percentile, s.
    pub p95_s: f64,
}

/// A service whose start time grew.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// Its name (a script or a unit).
    pub service: String,
    /// The median before, s.
    pub before_s: f64,
    /// The median after, s.
    pub after_s: f64,
    /// `after_s - before_s`.
    pub grew_s: f64,
}

/// The services that grew most from one set of boots to another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shift {
    /// The older side (a kernel release, or `older half`).
    pub from: String,
    /// The newer side.
    pub to: String,
    /// Boots on the older side.
    pub boots_from: usize,
    /// Boots on the newer side.
    pub boots_to: usize,
    /// The most grown first, at most [`MOVED`].
    pub moved: Vec<Moved>,
}

/// What `bootprint fleet` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetView {
    /// Boots read (each boot id of a machine once).
    pub boots: usize,
    /// Every machine, the regressed first, then by name.
    pub machines: Vec<MachineView>,
    /// The newest text logins by kernel release (version order).
    pub by_kernel_release: Vec<Group>,
    /// The newest text logins by model.
    pub by_model: Vec<Group>,
    /// Between each kernel release and the next (version order), over all machines' boots
    /// (each service's mean start time on each).
    pub between_releases: Vec<Shift>,
    /// Between the older and the newer half of each machine's boots, pooled (means).
    pub between_halves: Option<Shift>,
}

/// The `q` quantile of sorted `v` (not empty), interpolated between the two nearest ranks as
/// Prometheus' `quantile` does, so the figures match the shipped recording rules.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let rank = q * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

/// Kernel releases in version order: digit runs compare as numbers (6.1.0-9 before 6.1.0-10).
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 {
                out.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
                rest = &rest[digits..];
            } else {
                let other = rest
                    .find(|c: char| c.is_ascii_digit())
                    .unwrap_or(rest.len());
                out.push((0, rest[..other].to_string()));
                rest = &rest[other..];
            }
        }
        out
    }
    parts(a).cmp(&parts(b)).then_with(|| a.cmp(b))
}

fn median(v: &[f64]) -> f64 {
    baseline::median(v.to_vec())
}

/// Fleet-wide shifts compare means: a release that slows a service on a part of the fleet
/// (one model) moves the mean, where a median over all machines would hide it.
fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Per service, the figures of a set of boots.
type Pool = HashMap<u32, Vec<f64>>;

fn pool<'a>(boots: impl IntoIterator<Item = &'a Boot>, into: &mut Pool) -> usize {
    let mut n = 0;
    for b in boots {
        n += 1;
        for (s, t) in b.services.iter() {
            into.entry(*s).or_default().push(*t);
        }
    }
    n
}

impl Fleet {
    /// An empty fleet.
    pub fn new() -> Fleet {
        Fleet::default()
    }

    /// Adds one boot of `machine`; false when that machine already has this boot id (the
    /// same boot gathered twice), which is left out.
    pub fn add(&mut self, machine: &str, r: BootRecord) -> bool {
        let services = r
            .services
            .iter()
            .take(SERVICES)
            .map(|(n, t)| (self.names.id(n), *t))
            .collect();
        let model = match (&r.vendor, &r.product) {
            (None, None) => None,
            (v, p) => Some(
                self.names.id(format!(
                    "{} {}",
                    v.as_deref().unwrap_or(""),
                    p.as_deref().unwrap_or("")
                )
                .trim()),
            ),
        };
        let boot = Boot {
            boot_id: r.boot_id.into(),
            seq: r.seq,
            release: r.kernel_release.as_deref().map(|k| self.names.id(k)),
            model,
            text_login_s: r.text_login_s,
            boot_done_s: r.boot_done_s,
            services,
        };
        if !self.machines.contains_key(machine) {
            self.machines.insert(machine.to_string(), Vec::new());
        }
        let boots = self.machines.get_mut(machine).expect("inserted above");
        if boots.iter().any(|b| b.boot_id == boot.boot_id) {
            return false;
        }
        boots.push(boot);
        self.boots += 1;
        true
    }

    /// Boots added.
    pub fn boots(&self) -> usize {
        self.boots
    }

    /// The services of `after` that grew most over `before`, by `stat` of each side.
    fn moved(&self, before: &Pool, after: &Pool, stat: fn(&[f64]) -> f64) -> Vec<Moved> {
        let mut out: Vec<Moved> = after
            .iter()
            .filter_map(|(s, a)| {
                let b = before.get(s)?;
                let (before_s, after_s) = (stat(b), stat(a));
                (after_s > before_s).then(|| Moved {
                    service: self.names.get(*s).to_string(),
                    before_s,
                    after_s,
                    grew_s: after_s - before_s,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.grew_s
                .total_cmp(&a.grew_s)
                .then_with(|| a.service.cmp(&b.service))
        });
        out.truncate(MOVED);
        out
    }

    fn machine(&self, name: &str, boots: &[&Boot], over: usize) -> MachineView {
        let newest = boots[boots.len() - 1];
        let history = |f: fn(&Boot) -> Option<f64>| boots.iter().map(|b| f(b)).collect::<Vec<_>>();
        let login = baseline::of(&history(|b| b.text_login_s));
        let done = baseline::of(&history(|b| b.boot_done_s));
        let run = [&login, &done]
            .iter()
            .filter_map(|b| b.as_ref().map(|b| b.over_boots))
            .max()
            .unwrap_or(0);
        let regressed = over > 0 && run >= over;
        let moved = if regressed {
            // The regressed run against the window of boots before it.
            let split = boots.len() - run.min(boots.len());
            let (mut before, mut after) = (Pool::new(), Pool::new());
            let from = split.saturating_sub(baseline::BASELINE_BOOTS);
            pool(boots[from..split].iter().copied(), &mut before);
            pool(boots[split..].iter().copied(), &mut after);
            self.moved(&before, &after, median)
        } else {
            Vec::new()
        };
        MachineView {
            machine: name.to_string(),
            boots: boots.len(),
            boot_id: newest.boot_id.to_string(),
            kernel_release: newest.release.map(|r| self.names.get(r).to_string()),
            model: newest.model.map(|m| self.names.get(m).to_string()),
            text_login_s: newest.text_login_s,
            boot_done_s: newest.boot_done_s,
            text_login_baseline: login,
            boot_done_baseline: done,
            regressed,
            moved,
        }
    }

    /// The view: machines regressed when their newest `over` boots or more in a row were over
    /// their baselines (text login or boot done; 0 flags none).
    pub fn view(&self, over: usize) -> FleetView {
        let mut machines = Vec::with_capacity(self.machines.len());
        let mut by_release: HashMap<Option<u32>, Vec<f64>> = HashMap::new();
        let mut by_model: HashMap<Option<u32>, Vec<f64>> = HashMap::new();
        let mut release_pools: HashMap<u32, (usize, Pool)> = HashMap::new();
        let (mut older, mut newer) = (Pool::new(), Pool::new());
        let (mut n_older, mut n_newer) = (0, 0);
        for (name, boots) in &self.machines {
            let mut boots: Vec<&Boot> = boots.iter().collect();
            // Stable: boots without a seq keep the order they were read in.
            boots.sort_by_key(|b| b.seq);
            let m = self.machine(name, &boots, over);
            let newest = boots[boots.len() - 1];
            if let Some(t) = m.text_login_s {
                by_release.entry(newest.release).or_default().push(t);
                by_model.entry(newest.model).or_default().push(t);
            }
            machines.push(m);
            for b in &boots {
                if let Some(r) = b.release {
                    let (n, p) = release_pools.entry(r).or_default();
                    *n += pool([*b], p);
                }
            }
            if boots.len() >= 2 {
                let half = boots.len() / 2;
                n_older += pool(boots[..half].iter().copied(), &mut older);
                n_newer += pool(boots[half..].iter().copied(), &mut newer);
            }
        }
        machines.sort_by(|a, b| {
            b.regressed
                .cmp(&a.regressed)
                .then_with(|| a.machine.cmp(&b.machine))
        });
        let groups = |g: HashMap<Option<u32>, Vec<f64>>| {
            let mut out: Vec<Group> = g
                .into_iter()
                .map(|(k, mut v)| {
                    v.sort_by(f64::total_cmp);
                    Group {
                        key: k.map_or("unknown", |k| self.names.get(k)).to_string(),
                        machines: v.len(),
                        p50_s: quantile(&v, 0.5),
                        p95_s: quantile(&v, 0.95),
                    }
                })
                .collect();
            out.sort_by(|a, b| version_cmp(&a.key, &b.key));
            out
        };
        let mut releases: Vec<(u32, (usize, Pool))> = release_pools.into_iter().collect();
        releases.sort_by(|a, b| version_cmp(self.names.get(a.0), self.names.get(b.0)));
        let between_releases = releases
            .windows(2)
            .map(|w| Shift {
                from: self.names.get(w[0].0).to_string(),
                to: self.names.get(w[1].0).to_string(),
                boots_from: w[0].1 .0,
                boots_to: w[1].1 .0,
                moved: self.moved(&w[0].1 .1, &w[1].1 .1, mean),
            })
            .collect();
        let between_halves = (n_older > 0).then(|| Shift {
            from: "older half".to_string(),
            to: "newer half".to_string(),
            boots_from: n_older,
            boots_to: n_newer,
            moved: self.moved(&older, &newer, mean),
        });
        FleetView {
            boots: self.boots,
            machines,
            by_kernel_release: groups(by_release),
            by_model: groups(by_model),
            between_releases,
            between_halves,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(id: &str, seq: u64, release: &str, login: f64, services: &[(&str, f64)]) -> BootRecord {
        BootRecord {
            boot_id: id.to_string(),
            seq: Some(seq),
            kernel_release: Some(release.to_string()),
            vendor: Some("QEMU".to_string()),
            product: Some("Standard PC".to_string()),
            text_login_s: Some(login),
            boot_done_s: Some(login + 2.0),
            services: services.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        }
    }

    #[test]
    fn quantiles_interpolate_as_prometheus_does() {
        // docs/export.md's rule test: logins of 10, 10, 10, 12, 14 and 15 s give 11 and 14.75 s.
        let v = [10.0, 10.0, 10.0, 12.0, 14.0, 15.0];
        assert_eq!((quantile(&v, 0.5), quantile(&v, 0.95)), (11.0, 14.75));
        assert_eq!(quantile(&[3.0], 0.95), 3.0);
    }

    #[test]
    fn versions_sort_by_their_numbers() {
        let mut v = [
            "6.1.0-10-amd64",
            "6.1.0-9-amd64",
            "5.10.0-28-amd64",
            "6.12.1",
        ];
        v.sort_by(|a, b| version_cmp(a, b));
        assert_eq!(
            v,
            [
                "5.10.0-28-amd64",
                "6.1.0-9-amd64",
                "6.1.0-10-amd64",
                "6.12.1"
            ]
        );
    }

    #[test]
    fn the_regressed_machine_and_the_service_that_moved() {
        let mut f = Fleet::new();
        for m in 0..4 {
            let name = format!("m{m}");
            for i in 0..6u64 {
                let slow = m == 2 && i >= 4;
                let login = if slow { 15.0 } else { 10.0 + m as f64 * 0.1 };
                let dhcp = if slow { 6.0 } else { 1.0 };
                let release = if i < 3 { "6.1.0-9" } else { "6.1.0-10" };
                let r = boot(
                    &format!("{name}-{i}"),
                    i,
                    release,
                    login,
                    &[("dhcp", dhcp), ("ssh", 0.5)],
                );
                assert!(f.add(&name, r));
            }
        }
        // The same boot gathered twice counts once.
        assert!(!f.add("m0", boot("m0-0", 0, "6.1.0-9", 10.0, &[])));
        assert_eq!(f.boots(), 24);
        let v = f.view(1);
        let flagged: Vec<&str> = v
            .machines
            .iter()
            .filter(|m| m.regressed)
            .map(|m| m.machine.as_str())
            .collect();
        assert_eq!(flagged, ["m2"]);
        let m2 = &v.machines[0];
        assert_eq!(m2.text_login_baseline.as_ref().unwrap().over_boots, 2);
        assert_eq!(m2.moved[0].service, "dhcp");
        assert_eq!((m2.moved[0].before_s, m2.moved[0].after_s), (1.0, 6.0));
        assert!(
            m2.moved.iter().all(|m| m.service != "ssh"),
            "ssh did not grow"
        );
        // Two in a row asked: still m2; three: none.
        assert_eq!(f.view(2).machines.iter().filter(|m| m.regressed).count(), 1);
        assert_eq!(f.view(3).machines.iter().filter(|m| m.regressed).count(), 0);
        // Newest logins 10, 10.1, 15, 10.3 on one release and one model.
        assert_eq!(v.by_kernel_release.len(), 1);
        let g = &v.by_kernel_release[0];
        assert_eq!((g.key.as_str(), g.machines), ("6.1.0-10", 4));
        assert!((g.p50_s - 10.2).abs() < 1e-9, "{g:?}");
        assert_eq!(v.by_model[0].key, "QEMU Standard PC");
        // Fleet-wide, dhcp grew from the older release to the newer, and between the halves.
        assert_eq!(v.between_releases.len(), 1);
        let s = &v.between_releases[0];
        assert_eq!((s.from.as_str(), s.to.as_str()), ("6.1.0-9", "6.1.0-10"));
        assert_eq!(s.moved[0].service, "dhcp");
        assert_eq!(v.between_halves.as_ref().unwrap().moved[0].service, "dhcp");
    }
}
