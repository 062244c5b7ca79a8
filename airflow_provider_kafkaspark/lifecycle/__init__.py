"""The lifecycle verbs the operators and the CLI share, one module each: `submit` (with its
warm `handover`), `stop`, `restore`, `backfill`. Each observes first (`observe`: lease,
submitted marker, backend), decides, and only then acts. No Airflow here: operators translate
connections and context into these calls and the results into XCom."""
