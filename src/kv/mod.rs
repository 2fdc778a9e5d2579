//! Database workloads on embedded engines (YCSB, db_bench style).
