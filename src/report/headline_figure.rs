//! The figure a summary card headlines, from its candidate points. A
//! workload measured on one target over several rounds is the median of
//! its rounds, not its best one; a figure measured on a cache rather than
//! a device (a tmpfs configuration, a remote target in the page cache or
//! in RAM) is headlined only when nothing else was measured, and then says
//! so; otherwise the card headlines the best uncached figure and names a
//! higher cached one beside it.

use crate::results::Param;
use std::borrow::Cow;

use crate::analysis::baseline::median;
use crate::analysis::media::{is_media_point, pass_of, workload_of};
use crate::results::{Point, Results};

/// The setups (media targets, remote transports) whose data sat in memory.
pub struct Cached {
    setups: Vec<(String, &'static str)>,
}

impl Cached {
    pub fn of(r: &Results) -> Cached {
        let mut setups = Vec::new();
        let media = r.extra.media();
        for c in media.iter().flat_map(|m| m.configurations.iter().flatten()) {
            if c.name == "tmpfs" || c.made.starts_with("tmpfs") {
                setups.push((c.name.clone(), "a file system in RAM"));
            }
        }
        let remote = r.extra.remote();
        for t in remote.iter().flat_map(|r| &r.transports) {
            let cache = t.target_cache.as_deref().unwrap_or_default();
            let backing = t.backing.as_deref().unwrap_or_default();
            if cache == "RAM" || backing.starts_with("RAM") {
                setups.push((t.label.clone(), "a target in RAM"));
            } else if cache.starts_with("buffered") || backing.contains("buffered") {
                setups.push((t.label.clone(), "a target in the page cache"));
            }
        }
        Cached { setups }
    }

    /// What cached the point's data, if it ran on a cached setup.
    pub fn why(&self, p: &Point) -> Option<&'static str> {
        let setup = setup_of(p)?;
        self.setups
            .iter()
            .find(|(label, _)| *label == setup)
            .map(|(_, why)| *why)
    }
}

/// The target or transport a point ran on, if it names one.
fn setup_of(p: &Point) -> Option<String> {
    pass_of(p)
        .map(|id| id.setup.clone())
        .or_else(|| p.param(Param::Transport).map(str::to_string))
}

/// One candidate figure: a point, or a media workload's rounds on one
/// setup (`point` is the round nearest the median).
pub struct Figure<'a> {
    pub point: &'a Point,
    pub value: f64,
    pub rounds: usize,
    pub cache: Option<&'static str>,
}

impl Figure<'_> {
    /// Where the figure comes from: the point, or the workload on its
    /// setup with the rounds it is the median of.
    pub fn source(&self) -> String {
        match (self.rounds > 1, setup_of(self.point)) {
            (true, Some(setup)) => format!(
                "{setup}: {}, median of {} rounds",
                workload_of(self.point),
                self.rounds
            ),
            _ => self.point.name.clone(),
        }
    }

    fn setup(&self) -> String {
        setup_of(self.point).unwrap_or_else(|| self.point.name.clone())
    }
}

/// The figures of `pts` by `key`: media points grouped by setup, part and
/// workload (the median over their rounds), every other point alone.
pub fn figures<'a>(
    pts: &[&'a Point],
    key: impl Fn(&Point) -> f64,
    cached: &Cached,
) -> Vec<Figure<'a>> {
    type Group<'a> = (Option<(String, Option<String>, String)>, Vec<&'a Point>);
    let mut groups: Vec<Group<'a>> = Vec::new();
    for p in pts {
        let id = is_media_point(p)
            .then(|| pass_of(p))
            .flatten()
            .map(Cow::into_owned)
            .map(|id| (id.setup, id.part, id.workload));
        match groups.iter_mut().find(|(g, _)| id.is_some() && *g == id) {
            Some((_, members)) => members.push(p),
            None => groups.push((id, vec![p])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(_, members)| {
            let values: Vec<f64> = members.iter().map(|p| key(p)).collect();
            let value = median(&values)?;
            let nearest = members
                .iter()
                .min_by(|a, b| (key(a) - value).abs().total_cmp(&(key(b) - value).abs()))?;
            Some(Figure {
                point: nearest,
                value,
                rounds: members.len(),
                cache: cached.why(nearest),
            })
        })
        .collect()
}

/// The headline of `figs` by `better` (true: the first is better): the
/// best uncached figure, and the best cached one where it beats it (or
/// the best cached alone when nothing else was measured).
pub fn pick<'a>(
    figs: Vec<Figure<'a>>,
    better: impl Fn(f64, f64) -> bool,
) -> Option<(Figure<'a>, Option<Figure<'a>>)> {
    let mut main: Option<Figure<'a>> = None;
    let mut cached: Option<Figure<'a>> = None;
    for f in figs {
        let slot = if f.cache.is_some() {
            &mut cached
        } else {
            &mut main
        };
        if slot.as_ref().is_none_or(|b| better(f.value, b.value)) {
            *slot = Some(f);
        }
    }
    match (main, cached) {
        (Some(m), Some(c)) if better(c.value, m.value) => Some((m, Some(c))),
        (Some(m), _) => Some((m, None)),
        (None, c) => c.map(|c| (c, None)),
    }
}

/// The card's detail: the source, and the caveat of a cached figure.
pub fn detail(
    main: &Figure<'_>,
    above: Option<&Figure<'_>>,
    value: impl Fn(f64) -> String,
) -> String {
    let mut d = main.source();
    if let Some(why) = main.cache {
        d.push_str(&format!(
            "; measured on {}, {why}: a cache, not a device",
            main.setup()
        ));
    }
    if let Some(c) = above {
        d.push_str(&format!(
            "; {}, {}, reached {}: a cache, not a device",
            c.setup(),
            c.cache.unwrap_or("cached"),
            value(c.value)
        ));
    }
    d
}

#[cfg(test)]
mod tests {
    use crate::report::summary::headlines;
    use crate::results::Results;

    fn fixture(name: &str) -> Results {
        let path = format!(
            "{}/tests/fixtures/report/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        Results::read(std::path::Path::new(&path)).unwrap()
    }

    fn card(r: &Results, label: &str) -> (String, String) {
        let h = headlines(r)
            .into_iter()
            .find(|h| h.label.contains(label))
            .unwrap_or_else(|| panic!("no {label} card in {:?}", headlines(r)));
        (h.value, h.detail)
    }

    /// Issue 44 item 10: the media card headlined tmpfs's best round
    /// (120k IOPS); it is the best device's median, tmpfs named beside it.
    #[test]
    fn a_media_card_is_a_median_on_a_device_with_tmpfs_named() {
        let r = fixture("media.json");
        let (value, detail) = card(&r, "max 4k random read IOPS");
        // a's rounds: 42.8k, 36.5k, 22.7k; b's 39.4k, 26.0k, 27.8k.
        assert_eq!(value, crate::figures::fmt::count(36460.844394558815));
        assert!(
            detail.starts_with("a: randread-4k-qd4-io_uring, median of 3 rounds"),
            "{detail}"
        );
        assert!(
            detail.contains("tmpfs, a file system in RAM, reached"),
            "{detail}"
        );
        assert!(
            detail.contains(&crate::figures::fmt::count(110491.22189894813)),
            "{detail}"
        );
    }

    /// Issue 44 item 10: the remote card headlined nbdkit's memory target.
    #[test]
    fn a_remote_card_headlines_no_target_in_ram() {
        let r = fixture("remote-nbd.json");
        let (value, detail) = card(&r, "max 4k random read IOPS");
        let das = r
            .points
            .iter()
            .find(|p| p.name == "das: randread-4k-qd8-io_uring")
            .unwrap();
        assert_eq!(value, crate::figures::fmt::count(das.total.iops));
        assert!(detail.starts_with("das: randread-4k-qd8"), "{detail}");
        assert!(
            detail.contains("nbd-nbdkit-memory, a target in RAM, reached"),
            "{detail}"
        );
    }

    /// Only a cached medium measured: it is the headline, and says so.
    #[test]
    fn a_cached_figure_alone_is_headlined_with_its_caveat() {
        let mut r = fixture("media.json");
        r.points.retain(|p| p.name.starts_with("tmpfs"));
        let (_, detail) = card(&r, "4k random read IOPS");
        assert!(
            detail.contains("measured on tmpfs, a file system in RAM: a cache, not a device"),
            "{detail}"
        );
    }
}
