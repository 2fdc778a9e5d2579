//! YCSB's CoreWorkload: configuration from properties, the load phase
//! (inserts of `recordcount` records) and the run phase (the operation mix).
//!
//! On an embedded engine a record is one value: `fieldcount` fields of
//! `fieldlength` bytes after the integrity header. As in YCSB's RocksDB
//! binding, an update reads the record, replaces one field (all with
//! `writeallfields=true`) and writes it back. On a server the fields are
//! kept apart (`kv::fields`) and an update writes its field without
//! reading, as YCSB's JDBC and Redis bindings do. Read-modify-write is
//! recorded as a whole and as its read and update parts.

use super::clock::now_ns;
use super::fields::{self, FieldLayout, TextPool};
use super::generator::{
    AcknowledgedCounter, Counter, Discrete, Exponential, Hotspot, ScrambledZipfian, Sequential,
    SkewedLatest, UniformLong, Zipfian,
};
use super::keys::{build_key_name, InsertOrder};
use super::phase::{Work, Worker};
use super::props::Props;
use super::recorder::{KvOp, ScanTally};
use super::value::{self, BodyPool, HEADER};
use crate::error::usage;
use anyhow::Result;

/// The operation count `iolab run`'s database step gives its time-based
/// runs (with `maxexecutiontime`): being stopped by the time is no news
/// there. Any other count a run does not reach is warned about.
pub const TIME_BASED_OPS: u64 = 1_000_000_000;

/// The request distribution (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    Sequential,
    Exponential,
}

/// CoreWorkload properties, defaults as in YCSB.
#[derive(Debug, Clone)]
pub struct YcsbConfig {
    pub recordcount: i64,
    pub operationcount: i64,
    pub fieldcount: i64,
    pub fieldlength: i64,
    pub writeallfields: bool,
    pub readproportion: f64,
    pub updateproportion: f64,
    pub insertproportion: f64,
    pub scanproportion: f64,
    pub rmwproportion: f64,
    pub distribution: Distribution,
    pub zipfianconstant: f64,
    pub minscanlength: i64,
    pub maxscanlength: i64,
    pub scan_zipfian: bool,
    pub insertstart: i64,
    pub insertcount: i64,
    pub zeropadding: usize,
    pub insertorder: InsertOrder,
    pub hotspotdatafraction: f64,
    pub hotspotopnfraction: f64,
    pub exponential_percentile: f64,
    pub exponential_frac: f64,
    /// `maxexecutiontime` (seconds): each phase stops after this long.
    pub max_execution_s: Option<u64>,
}

impl YcsbConfig {
    pub fn from_props(p: &Props) -> Result<YcsbConfig> {
        let mut recordcount = p.i64_or("recordcount", 0)?;
        if recordcount < 0 {
            return Err(usage(
                "recordcount",
                "must be a number of records (0 or more)",
            ));
        }
        if recordcount == 0 {
            recordcount = i32::MAX as i64;
        }
        let insertstart = p.i64_or("insertstart", 0)?;
        let insertcount = p.i64_or("insertcount", recordcount.saturating_sub(insertstart))?;
        if insertstart < 0
            || insertcount < 0
            || recordcount < insertstart.saturating_add(insertcount)
        {
            return Err(usage(
                "insertcount",
                "recordcount must be >= insertstart + insertcount",
            ));
        }
        let distribution = match p.str_or("requestdistribution", "uniform") {
            "uniform" => Distribution::Uniform,
            "zipfian" => Distribution::Zipfian,
            "latest" => Distribution::Latest,
            "hotspot" => Distribution::Hotspot,
            "sequential" => Distribution::Sequential,
            "exponential" => Distribution::Exponential,
            other => {
                return Err(usage(
                    "requestdistribution",
                    format!("unknown distribution '{other}'"),
                ))
            }
        };
        let fld = p.str_or("fieldlengthdistribution", "constant");
        if fld != "constant" {
            return Err(usage(
                "fieldlengthdistribution",
                format!("'{fld}' is not supported: iolab verifies every read and needs constant field lengths"),
            ));
        }
        let scan_zipfian = match p.str_or("scanlengthdistribution", "uniform") {
            "uniform" => false,
            "zipfian" => true,
            other => {
                return Err(usage(
                    "scanlengthdistribution",
                    format!("'{other}' not allowed for scan length"),
                ))
            }
        };
        let insertorder = if p.str_or("insertorder", "hashed") == "hashed" {
            InsertOrder::Hashed
        } else {
            InsertOrder::Ordered
        };
        let cfg = YcsbConfig {
            recordcount,
            operationcount: p.i64_or("operationcount", 0)?,
            fieldcount: p.i64_or("fieldcount", 10)?,
            fieldlength: p.i64_or("fieldlength", 100)?,
            writeallfields: p.bool_or("writeallfields", false)?,
            readproportion: p.f64_or("readproportion", 0.95)?,
            updateproportion: p.f64_or("updateproportion", 0.05)?,
            insertproportion: p.f64_or("insertproportion", 0.0)?,
            scanproportion: p.f64_or("scanproportion", 0.0)?,
            rmwproportion: p.f64_or("readmodifywriteproportion", 0.0)?,
            distribution,
            zipfianconstant: p.f64_or("zipfianconstant", super::generator::ZIPFIAN_CONSTANT)?,
            minscanlength: p.i64_or("minscanlength", 1)?,
            maxscanlength: p.i64_or("maxscanlength", 1000)?,
            scan_zipfian,
            insertstart,
            insertcount,
            zeropadding: p.i64_or("zeropadding", 1)?.clamp(0, 64) as usize,
            insertorder,
            hotspotdatafraction: p.f64_or("hotspotdatafraction", 0.2)?,
            hotspotopnfraction: p.f64_or("hotspotopnfraction", 0.8)?,
            exponential_percentile: p.f64_or("exponential.percentile", 95.0)?,
            exponential_frac: p.f64_or("exponential.frac", 0.8571428571)?,
            max_execution_s: match p.i64_or("maxexecutiontime", 0)? {
                0 => None,
                s if s > 0 => Some(s as u64),
                _ => {
                    return Err(usage(
                        "maxexecutiontime",
                        "must be a number of seconds (0 for no limit)",
                    ))
                }
            },
        };
        if cfg.fieldcount < 1 || cfg.fieldlength < 1 {
            return Err(usage(
                "fieldcount",
                "fieldcount and fieldlength must be >= 1",
            ));
        }
        if cfg.fieldcount.saturating_mul(cfg.fieldlength) > 64 << 20 {
            return Err(usage(
                "fieldlength",
                "records larger than 64 MiB are not supported",
            ));
        }
        if !(cfg.zipfianconstant > 0.0 && cfg.zipfianconstant != 1.0) {
            return Err(usage("zipfianconstant", "must be > 0 and != 1"));
        }
        if cfg.minscanlength < 1 || cfg.maxscanlength < cfg.minscanlength {
            return Err(usage(
                "maxscanlength",
                "need 1 <= minscanlength <= maxscanlength",
            ));
        }
        let sum = cfg.readproportion
            + cfg.updateproportion
            + cfg.insertproportion
            + cfg.scanproportion
            + cfg.rmwproportion;
        if sum <= 0.0 {
            return Err(usage("readproportion", "all operation proportions are 0"));
        }
        Ok(cfg)
    }

    /// Bytes of one record value (header + fields).
    pub fn value_len(&self) -> usize {
        HEADER + (self.fieldcount * self.fieldlength) as usize
    }
}

/// The key chooser for the run phase (`keychooser`).
enum KeyChooser {
    Uniform(UniformLong),
    Zipfian(ScrambledZipfian),
    Latest(f64),
    Hotspot(Hotspot),
    Sequential(Sequential),
    Exponential(Exponential),
}

/// How a run's records are made and checked.
enum Records {
    /// One value with iolab's integrity header (embedded engines).
    Whole(BodyPool),
    /// Fields kept apart, each checking itself (servers).
    Fields(FieldLayout, TextPool),
}

impl Records {
    fn new(cfg: &YcsbConfig, fields_apart: bool, seed: u64) -> Records {
        if fields_apart {
            let len = cfg.fieldlength as usize;
            let layout = FieldLayout {
                count: cfg.fieldcount as usize,
                len,
            };
            Records::Fields(layout, TextPool::new(len, seed))
        } else {
            Records::Whole(BodyPool::new(cfg.value_len(), seed))
        }
    }

    /// A fresh record (version `ver`) for `w.key` into `w.val`.
    fn fresh(&self, w: &mut Worker<'_>, ver: u64, value_len: usize) {
        match self {
            Records::Whole(pool) => {
                value::build(pool, &mut w.bodies, &w.key, ver, value_len, &mut w.val)
            }
            Records::Fields(l, pool) => {
                fields::build_record(pool, &mut w.rng, &w.key, *l, &mut w.val)
            }
        }
    }

    /// Check the record read for `key`; its version (0 for fields).
    fn verify(&self, key: &[u8], record: &[u8]) -> Result<u64, String> {
        match self {
            Records::Whole(_) => value::verify(key, record).map_err(|e| e.to_string()),
            Records::Fields(l, _) => fields::verify_record(key, *l, record).map(|()| 0),
        }
    }

    fn scan_tally(&self) -> ScanTally {
        match self {
            Records::Whole(_) => ScanTally::default(),
            Records::Fields(l, _) => ScanTally::for_fields(*l),
        }
    }
}

/// YCSB's load phase: `insertcount` inserts from `insertstart`.
pub struct YcsbLoad {
    cfg: YcsbConfig,
    keys: Counter,
    records: Records,
}

impl YcsbLoad {
    /// `fields_apart`: the engine keeps fields apart (`KvEngine::field_count`).
    pub fn new(cfg: &YcsbConfig, seed: u64, fields_apart: bool) -> YcsbLoad {
        YcsbLoad {
            cfg: cfg.clone(),
            keys: Counter::new(cfg.insertstart),
            records: Records::new(cfg, fields_apart, seed),
        }
    }
}

impl Work for YcsbLoad {
    fn kinds(&self) -> Vec<KvOp> {
        vec![KvOp::Insert]
    }

    fn op(&self, w: &mut Worker<'_>) -> Result<()> {
        let keynum = self.keys.next();
        build_key_name(
            keynum,
            self.cfg.zeropadding,
            self.cfg.insertorder,
            &mut w.key,
        );
        self.records.fresh(w, 0, self.cfg.value_len());
        let t0 = now_ns();
        w.s.insert(&w.key, &w.val)?;
        let t1 = now_ns();
        let bytes = (w.key.len() + w.val.len()) as u64;
        w.rec.logical_written += bytes;
        w.record(KvOp::Insert, t0, t1, 1, bytes);
        Ok(())
    }
}

/// YCSB's transaction (run) phase.
pub struct YcsbRun {
    cfg: YcsbConfig,
    ops: Discrete<KvOp>,
    chooser: KeyChooser,
    inserts: AcknowledgedCounter,
    fields: UniformLong,
    scan_uniform: UniformLong,
    scan_zipf: Option<Zipfian>,
    records: Records,
}

impl YcsbRun {
    /// `fields_apart`: the engine keeps fields apart (`KvEngine::field_count`).
    pub fn new(cfg: &YcsbConfig, seed: u64, fields_apart: bool) -> YcsbRun {
        let mut ops = Discrete::new();
        for (w, k) in [
            (cfg.readproportion, KvOp::Read),
            (cfg.updateproportion, KvOp::Update),
            (cfg.insertproportion, KvOp::Insert),
            (cfg.scanproportion, KvOp::Scan),
            (cfg.rmwproportion, KvOp::Rmw),
        ] {
            if w > 0.0 {
                ops.add(w, k);
            }
        }
        let (lo, n) = (cfg.insertstart, cfg.insertcount);
        let chooser = match cfg.distribution {
            Distribution::Uniform => KeyChooser::Uniform(UniformLong::new(lo, lo + n - 1)),
            Distribution::Zipfian => {
                // YCSB sizes the key space for the expected inserts (fudge factor 2).
                let expected =
                    (cfg.operationcount as f64 * cfg.insertproportion * 2.0) as i32 as i64;
                KeyChooser::Zipfian(ScrambledZipfian::new(
                    lo,
                    lo + n + expected,
                    cfg.zipfianconstant,
                ))
            }
            Distribution::Latest => KeyChooser::Latest(cfg.zipfianconstant),
            Distribution::Hotspot => KeyChooser::Hotspot(Hotspot::new(
                lo,
                lo + n - 1,
                cfg.hotspotdatafraction,
                cfg.hotspotopnfraction,
            )),
            Distribution::Sequential => KeyChooser::Sequential(Sequential::new(lo, lo + n - 1)),
            Distribution::Exponential => KeyChooser::Exponential(Exponential::new(
                cfg.exponential_percentile,
                cfg.recordcount as f64 * cfg.exponential_frac,
            )),
        };
        YcsbRun {
            cfg: cfg.clone(),
            ops,
            chooser,
            inserts: AcknowledgedCounter::new(cfg.recordcount),
            fields: UniformLong::new(0, cfg.fieldcount - 1),
            scan_uniform: UniformLong::new(cfg.minscanlength, cfg.maxscanlength),
            scan_zipf: cfg.scan_zipfian.then(|| {
                Zipfian::new(
                    cfg.minscanlength,
                    cfg.maxscanlength,
                    super::generator::ZIPFIAN_CONSTANT,
                )
            }),
            records: Records::new(cfg, fields_apart, seed ^ 0x5EED),
        }
    }

    /// `nextKeynum`: a key that has been inserted (acknowledged).
    fn next_keynum(&self, w: &mut Worker<'_>) -> i64 {
        let last = self.inserts.last();
        loop {
            let k = match &self.chooser {
                KeyChooser::Exponential(e) => last - e.next(&mut w.rng) as i64,
                KeyChooser::Uniform(u) => u.next(&mut w.rng),
                KeyChooser::Zipfian(z) => z.next(&mut w.rng),
                KeyChooser::Hotspot(h) => h.next(&mut w.rng),
                KeyChooser::Sequential(s) => s.next(),
                KeyChooser::Latest(_) => match w.latest.as_mut() {
                    Some(l) => l.next(&mut w.rng, &self.inserts),
                    None => last,
                },
            };
            let ok = match self.chooser {
                KeyChooser::Exponential(_) => k >= 0,
                _ => k <= last,
            };
            if ok {
                return k;
            }
        }
    }

    /// Check a value read for `w.key` (in `w.buf`); returns its version.
    fn check(&self, w: &mut Worker<'_>, found: bool) -> u64 {
        if !found {
            if w.stores_data {
                w.rec.missing += 1;
                let k = String::from_utf8_lossy(&w.key).into_owned();
                w.rec.mismatch(|| format!("{k}: not found"));
            }
            return 0;
        }
        w.rec.verified += 1;
        match self.records.verify(&w.key, &w.buf) {
            Ok(v) => v,
            Err(e) => {
                let k = String::from_utf8_lossy(&w.key).into_owned();
                w.rec.mismatch(|| format!("{k}: {e}"));
                0
            }
        }
    }

    /// Turn the record in `w.buf` (version `ver`) into its next version in
    /// `w.val` (records kept whole).
    fn modify(&self, pool: &BodyPool, w: &mut Worker<'_>, found: bool, ver: u64) {
        let len = self.cfg.value_len();
        if !found || w.buf.len() != len {
            value::build(pool, &mut w.bodies, &w.key, ver + 1, len, &mut w.val);
            return;
        }
        w.val.clear();
        w.val.extend_from_slice(&w.buf);
        let fl = self.cfg.fieldlength as usize;
        if self.cfg.writeallfields {
            pool.fill(&mut w.rng, &mut w.val[HEADER..]);
        } else {
            let f = self.fields.next(&mut w.rng) as usize;
            let off = HEADER + f * fl;
            pool.fill(&mut w.rng, &mut w.val[off..off + fl]);
        }
        value::seal(&w.key, ver + 1, &mut w.val);
    }

    fn key(&self, w: &mut Worker<'_>, keynum: i64) {
        build_key_name(
            keynum,
            self.cfg.zeropadding,
            self.cfg.insertorder,
            &mut w.key,
        );
    }
}

impl Work for YcsbRun {
    fn kinds(&self) -> Vec<KvOp> {
        let mut k = vec![KvOp::Read, KvOp::Update, KvOp::Insert, KvOp::Scan];
        if self.cfg.rmwproportion > 0.0 {
            k.extend([KvOp::Rmw, KvOp::RmwRead, KvOp::RmwUpdate]);
        }
        k
    }

    fn init_worker(&self, w: &mut Worker<'_>) {
        if let KeyChooser::Latest(theta) = self.chooser {
            w.latest = Some(SkewedLatest::new(self.inserts.last(), theta));
        }
    }

    fn op(&self, w: &mut Worker<'_>) -> Result<()> {
        let Some(kind) = self.ops.next(&mut w.rng) else {
            return Ok(());
        };
        match kind {
            KvOp::Read => {
                let k = self.next_keynum(w);
                self.key(w, k);
                let t0 = now_ns();
                let found = w.s.read(&w.key, &mut w.buf)?;
                let t1 = now_ns();
                let bytes = (w.key.len() + if found { w.buf.len() } else { 0 }) as u64;
                w.record(KvOp::Read, t0, t1, 1, bytes);
                self.check(w, found);
            }
            KvOp::Update => {
                let k = self.next_keynum(w);
                self.key(w, k);
                match &self.records {
                    Records::Whole(pool) => {
                        let t0 = now_ns();
                        let found = w.s.read(&w.key, &mut w.buf)?;
                        let ta = now_ns();
                        let ver = self.check(w, found);
                        self.modify(pool, w, found, ver);
                        let (tb, t1, bytes) = self.write_whole(w)?;
                        // Service time excludes iolab's own verify/modify work.
                        w.record(KvOp::Update, t0, t1 - (tb - ta), 1, bytes);
                    }
                    Records::Fields(l, pool) => {
                        let (t0, t1, bytes) = self.write_fields(*l, pool, w)?;
                        w.record(KvOp::Update, t0, t1, 1, bytes);
                    }
                }
            }
            KvOp::Insert => {
                let keynum = self.inserts.next();
                self.key(w, keynum);
                self.records.fresh(w, 0, self.cfg.value_len());
                let t0 = now_ns();
                let r = w.s.insert(&w.key, &w.val);
                let t1 = now_ns();
                if self.inserts.acknowledge(keynum).is_err() {
                    anyhow::bail!("more than 2^20 unacknowledged inserts");
                }
                r?;
                let bytes = (w.key.len() + w.val.len()) as u64;
                w.rec.logical_written += bytes;
                w.record(KvOp::Insert, t0, t1, 1, bytes);
            }
            KvOp::Scan => {
                let k = self.next_keynum(w);
                self.key(w, k);
                let len = match &self.scan_zipf {
                    Some(z) => {
                        let mut z = z.clone();
                        z.next(&mut w.rng)
                    }
                    None => self.scan_uniform.next(&mut w.rng),
                } as usize;
                let mut tally = self.records.scan_tally();
                let t0 = now_ns();
                w.s.scan(&w.key, len, &mut |k, v| tally.visit(k, v))?;
                let t1 = now_ns();
                tally.settle(&mut w.rec);
                w.record(KvOp::Scan, t0, t1, 1, tally.bytes);
            }
            _ => {
                // Read-modify-write.
                let k = self.next_keynum(w);
                self.key(w, k);
                let t0 = now_ns();
                let found = w.s.read(&w.key, &mut w.buf)?;
                let t1 = now_ns();
                let ver = self.check(w, found);
                let (t2, t3, wbytes) = match &self.records {
                    Records::Whole(pool) => {
                        self.modify(pool, w, found, ver);
                        self.write_whole(w)?
                    }
                    Records::Fields(l, pool) => self.write_fields(*l, pool, w)?,
                };
                let rbytes = (w.key.len() + w.buf.len()) as u64;
                w.record(KvOp::RmwRead, t0, t1, 1, rbytes);
                w.record(KvOp::RmwUpdate, t2, t3, 1, wbytes);
                w.record(KvOp::Rmw, t0, t3 - (t2 - t1), 1, rbytes + wbytes);
            }
        }
        Ok(())
    }
}

impl YcsbRun {
    /// Write the record in `w.val` back whole; its start, end and bytes.
    fn write_whole(&self, w: &mut Worker<'_>) -> Result<(u64, u64, u64)> {
        let t0 = now_ns();
        w.s.update(&w.key, &w.val)?;
        let t1 = now_ns();
        let bytes = (w.key.len() + w.val.len()) as u64;
        w.rec.logical_written += bytes;
        Ok((t0, t1, bytes))
    }

    /// Write one fresh field of `w.key` (all with `writeallfields`)
    /// without reading the record; its start, end and bytes.
    fn write_fields(
        &self,
        l: FieldLayout,
        pool: &TextPool,
        w: &mut Worker<'_>,
    ) -> Result<(u64, u64, u64)> {
        let (t0, t1) = if self.cfg.writeallfields {
            fields::build_record(pool, &mut w.rng, &w.key, l, &mut w.val);
            let t0 = now_ns();
            w.s.update(&w.key, &w.val)?;
            (t0, now_ns())
        } else {
            let f = self.fields.next(&mut w.rng) as usize;
            w.val.clear();
            w.val.resize(l.len, 0);
            fields::build_field(pool, &mut w.rng, &w.key, f, &mut w.val);
            let t0 = now_ns();
            w.s.update_field(&w.key, f, &w.val)?;
            (t0, now_ns())
        };
        let bytes = (w.key.len() + w.val.len()) as u64;
        w.rec.logical_written += bytes;
        Ok((t0, t1, bytes))
    }
}
