"""Riehl et al., hierarchical confusion matrix: Tables III, IV and V reproduced from ../shared/data.

The expected values are typed from the paper's tables: TP, TN, FP, FN exactly, and ACC, PPV, TPR, F1, MCC as
the printed percentages (two decimals). File <-> row mapping: SPEC §6.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from hiersql.errors import DataWarning
from hiersql.inputs.decoding import read_transposon, transposon_taxonomy
from hiersql.inputs.store import Store
from hiersql.inputs.taxonomy import Taxonomy
from hiersql.measures.confusion import hierarchical_confusion_matrix

COLUMNS = ("tp", "tn", "fp", "fn", "accuracy", "precision", "recall", "f1", "mcc")

# model: TP, TN, FP, FN, ACC, PPV, TPR, F1, MCC (%)
TABLE_III = {
    "HC_GA": (19145, 27690, 7854, 7744, 75.02, 70.91, 71.20, 71.05, 49.08),
    "HC_LGA": (18420, 25582, 8598, 8469, 72.05, 68.18, 68.50, 68.34, 43.33),
    "NLLCPN": (17608, 24765, 9410, 9281, 69.39, 65.17, 65.48, 65.33, 37.93),
    "RFSB": (22833, 34026, 4131, 4056, 87.41, 84.68, 84.92, 84.80, 74.06),
    "TERL": (366, 630, 18776, 26523, 2.15, 1.91, 1.36, 1.59, -95.58),
    "TopDown": (1415, 2743, 16603, 25474, 8.99, 7.85, 5.26, 6.30, -81.49),
}

TABLE_IV = {
    "Averbis": (3613, 28863, 584, 857, 95.75, 86.09, 80.83, 83.37, 80.99),
    "Comtravo-DS": (3690, 29517, 1078, 780, 94.70, 77.39, 82.55, 79.89, 76.89),
    "DFKI-SLT": (3787, 28933, 536, 683, 96.41, 87.60, 84.72, 86.14, 84.09),
    "EricssonResearch": (3769, 28891, 455, 701, 96.58, 89.23, 84.32, 86.70, 84.79),
    "Fosil-hsmw": (3719, 29003, 694, 751, 95.77, 84.27, 83.20, 83.73, 81.30),
    "HSHL": (3647, 28877, 777, 823, 95.31, 82.44, 81.59, 82.01, 79.32),
    "HUIU": (3608, 28808, 867, 862, 94.94, 80.63, 80.72, 80.67, 77.76),
    "Raghavan": (3747, 28983, 522, 723, 96.34, 87.77, 83.83, 85.75, 83.68),
    "TwistBytes": (3852, 29551, 752, 618, 96.06, 83.67, 86.17, 84.90, 82.65),
    "Baseline": (3344, 29084, 544, 1126, 95.10, 86.01, 74.81, 80.02, 77.49),
    "Contender": (3809, 29835, 2301, 661, 91.91, 62.34, 85.21, 72.00, 68.53),
}

TABLE_V = {
    "Averbis": (8552, 125951, 4683, 6558, 92.29, 64.62, 56.60, 60.34, 56.24),
    "Comtravo-DS": (7187, 111871, 3376, 7923, 91.33, 68.04, 47.56, 55.99, 52.36),
    "DKFI-SLT": (7049, 112567, 2256, 8061, 92.06, 75.75, 46.65, 57.74, 55.56),
    "EricssonResearch": (8498, 119546, 3208, 6612, 92.88, 72.60, 56.24, 63.38, 60.10),
    "HSHL": (7167, 106488, 3025, 7943, 91.20, 70.32, 47.43, 56.65, 53.21),
    "TwistBytes": (9174, 130886, 4747, 5936, 92.91, 65.90, 60.71, 63.20, 59.35),
    "Baseline": (5183, 97128, 964, 9927, 90.38, 84.32, 34.30, 48.77, 50.00),
    "Contender": (7693, 118017, 2854, 7417, 92.45, 72.94, 50.91, 59.97, 57.05),
}

FILES_A = {
    "Averbis": "Averbis__BOHB_CNN",
    "Comtravo-DS": "Comtravo-DS__local_clf_logit_cnn",
    "DFKI-SLT": "DFKI-SLT__full",
    "EricssonResearch": "EricssonResearch__fconv_A6C1Y",
    "Fosil-hsmw": "fosil-hsmw__SVM_ECC",
    "HSHL": "HSHL__LogisticRegression_NaiveBayes1",
    "HUIU": "HUIU__multi",
    "Raghavan": "Raghavan__SVM-BPEB",
    "TwistBytes": "twistbytes__sklearn_hier_threshold_and_roots_baseline_thresholding",
    "Baseline": "LT-UHH__baseline",
    "Contender": "LT-UHH__contender",
}
FILES_B = {
    "Averbis": "Averbis__BOHB_CNN",
    "Comtravo-DS": "Comtravo-DS__local_clf_logit_cnn",
    "DKFI-SLT": "DFKI-SLT__full",  # sic, the paper's Table V
    "EricssonResearch": "EricssonResearch__fconv_A6C1Y",
    "HSHL": "HSHL__LogisticRegression_NaiveBayes1",
    "TwistBytes": "twistbytes__sklearn_hier_threshold",
    "Baseline": "LT-UHH__baseline",
    "Contender": "LT-UHH__contender",
}


def assert_table(result, expected: dict[str, tuple]) -> None:
    got = result.set_index("system")
    assert sorted(got.index) == sorted(expected)
    for system, row in expected.items():
        counts = tuple(int(got.loc[system, c]) for c in COLUMNS[:4])
        assert counts == row[:4], system
        for column, printed in zip(COLUMNS[4:], row[4:], strict=True):
            value = 100 * got.loc[system, column]
            assert abs(value - printed) <= 0.005 + 1e-9, (system, column, value, printed)


def empty_label_instances(path: Path) -> list[str]:
    """Instances of the subtask-A section whose line has an empty field (trailing or doubled tabs)."""
    section, out = None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() in ("subtask_a", "subtask_b"):
            section = line.strip()
        elif section == "subtask_a" and line.strip():
            fields = line.split("\t")
            if "" in fields[1:]:
                out.append(fields[0])
    return out


def load_subtask_a_as_authors(store: Store, system: str, path: Path) -> None:
    """The authors' reading of a subtask-A submission: every field after the id is a label, so an empty field
    (trailing tab) is a label "" outside the taxonomy, scored as one wrong path [root, ""]. The product's
    reader drops empty fields; this test-local loader adds them back as rows of the predictions table."""
    store.add_predictions(system, path, "germeval-a")
    store.con.execute(
        "INSERT INTO predictions SELECT $s, e.i, '', coalesce(max(p.rank), 0) + 1, NULL"
        " FROM (SELECT unnest($ids) AS i) AS e"
        " LEFT JOIN predictions AS p ON p.system = $s AND p.instance_id = e.i GROUP BY e.i",
        {"s": system, "ids": empty_label_instances(path)},
    )


@pytest.fixture(scope="module")
def germeval(data_dir: Path) -> Path:
    return data_dir / "germeval2019"


def test_table_iii_transposon(data_dir: Path) -> None:
    folder = data_dir / "transposon"
    store = Store()
    store.load_taxonomy(transposon_taxonomy())
    store.add_truth(read_transposon(folder / "truelabels.txt", binary=True))
    for model in TABLE_III:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # the AU(PRC) trailer of HC_GA and HC_LGA
            store.add_predictions(model, read_transposon(folder / f"predictions_{model}.txt"))
    assert_table(hierarchical_confusion_matrix(store), TABLE_III)


def test_table_iv_germeval_subtask_a(germeval: Path) -> None:
    full = Taxonomy.from_file(germeval / "hierarchy.txt")
    genres = full.children(full.root)
    assert len(genres) == 8
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("root", g) for g in genres]))
    store.add_truth(germeval / "blurbs_test_label.txt", "germeval-a")
    for system, stem in FILES_A.items():
        load_subtask_a_as_authors(store, system, germeval / "submissions" / f"{stem}.txt")
    assert store.con.execute("SELECT count(*) FROM predictions WHERE system = 'Contender' AND label = ''"
                             ).fetchall() == [(1442,)]
    assert_table(hierarchical_confusion_matrix(store), TABLE_IV)


def test_table_iv_contender_without_empty_labels(germeval: Path) -> None:
    """With the product's reading (empty fields dropped) the Contender's FP is 859, not the printed 2301."""
    full = Taxonomy.from_file(germeval / "hierarchy.txt")
    store = Store()
    store.load_taxonomy(Taxonomy.from_edges([("root", g) for g in full.children(full.root)]))
    store.add_truth(germeval / "blurbs_test_label.txt", "germeval-a")
    store.add_predictions("Contender", germeval / "submissions" / "LT-UHH__contender.txt", "germeval-a")
    row = hierarchical_confusion_matrix(store).iloc[0]
    assert (row["tp"], row["fp"], row["fn"]) == (3809, 2301 - 1442, 661)


def test_table_v_germeval_subtask_b(germeval: Path) -> None:
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(germeval / "hierarchy.txt"))
    store.add_truth(germeval / "blurbs_test_label.txt", "germeval-b")
    for system, stem in FILES_B.items():
        store.add_predictions(system, germeval / "submissions" / f"{stem}.txt", "germeval-b")
    assert_table(hierarchical_confusion_matrix(store), TABLE_V)


def test_table_v_from_canonical_long_files(data_dir: Path) -> None:
    """The same experiment read from the plain long files of data/canonical (label order = row order)."""
    canonical = data_dir / "canonical"
    store = Store()
    store.load_taxonomy(Taxonomy.from_file(canonical / "taxonomy.tsv"))
    store.add_truth(canonical / "truth_b.tsv")
    for system, stem in FILES_B.items():
        store.add_predictions(system, canonical / "pred_b" / f"{stem}.tsv")
    assert_table(hierarchical_confusion_matrix(store), TABLE_V)
