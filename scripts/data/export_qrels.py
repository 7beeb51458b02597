"""Write the judgements of any data block to a TREC qrels file (for the gold-label teacher).

``GoldQrelsReranker`` reads a TREC qrels file. Data whose judgements live in the data file
itself (HotpotQA's supporting paragraphs, ``is_supporting`` -> grade 1; fixtures) have none
on disk; this writes them, for the queries and candidates the block keeps. Example::

    uv run python scripts/data/export_qrels.py \
        --data '{dataloader_class: HotpotQALoader,
                 path: ../shared/data/hotpotqa-distractor-dev500/hotpotqa_dev_distractor_500.ircot_format.jsonl}' \
        --out runs/gold/hotpotqa-qrels.txt

then a teacher block ``{reranker_class: GoldQrelsReranker, qrels: runs/gold/hotpotqa-qrels.txt,
max_grade: 1}``. ``--data`` is one data block as YAML (the keys of an experiment config's
``data`` block, checked strictly). Exit 2 on a bad block or data without judgements.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import yaml

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.io.trec import write_qrels
from presentation_dependence.records import Qrels


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True, help="one data block as YAML (a mapping)")
    p.add_argument("--out", required=True, help="the TREC qrels file to write (atomically)")
    return p


def export_qrels(block: DataConfig) -> Qrels:
    """The judgements of the queries ``block`` loads (only those queries)."""
    ds = load_dataset(block)
    if ds.qrels is None:
        raise ConfigError(
            f"{ds.name}: this data block has no judgements. Fix: add qrels: PATH to the block "
            "or use data that carries them"
        )
    keep = set(ds.qids())
    qrels = Qrels({q: docs for q, docs in ds.qrels.judgements.items() if q in keep and docs})
    if not qrels.judgements:
        raise ConfigError(f"{ds.name}: none of the {len(keep)} queries has a judgement")
    return qrels


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    log = logging.getLogger("export_qrels")
    try:
        try:
            raw = yaml.safe_load(args.data)
        except yaml.YAMLError as e:
            raise ConfigError(f"--data is not valid YAML: {e}") from None
        qrels = export_qrels(build_dataclass(DataConfig, raw, "data"))
        write_qrels(qrels, args.out)
    except PresdepError as e:
        log.error("%s", e)
        return 2
    n = sum(len(d) for d in qrels.judgements.values())
    log.info("wrote %s: %d queries, %d judgements", args.out, len(qrels.judgements), n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
