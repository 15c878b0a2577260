"""parse_relation_fanouts: --fanouts for every relation, --fanouts-per-relation overrides, one-line errors."""

from __future__ import annotations

import pytest

from graphtier._fanouts import RelationFanouts
from graphtier.dataset.schema import Schema
from graphtier.errors import OptionError
from graphtier.sampling.relation_fanouts import parse_relation_fanouts, relation_label

SCHEMA = Schema.build(
    [("paper", 10, 4, "float32"), ("author", 5, 0, "float32"), ("inst", 2, 0, "float32")],
    [
        (("paper", "cites", "paper"), 1),
        (("author", "writes", "paper"), 1),
        (("paper", "rev", "author"), 1),
        (("inst", "rev", "author"), 1),
    ],  # fmt: skip
    "paper",
)


def test_fanouts_apply_to_every_relation_without_override():
    result = parse_relation_fanouts(None, SCHEMA, "10,5")
    assert list(result) == [rel.type for rel in SCHEMA.relations]
    assert all(f == (10, 5) for f in result.values())


def test_text_overrides_single_value_repeats_and_per_hop_values():
    result = parse_relation_fanouts("writes=3, cites=7/-1,paper___rev___author=2/1", SCHEMA, [10, 5])
    assert result[("author", "writes", "paper")] == (3, 3)
    assert result[("paper", "cites", "paper")] == (7, -1)
    assert result[("paper", "rev", "author")] == (2, 1)
    assert result[("inst", "rev", "author")] == (10, 5)


def test_mapping_with_tuples_names_and_sequences():
    result = parse_relation_fanouts({("inst", "rev", "author"): [4, 4], "cites": 2, "writes": "1/2"}, SCHEMA, [3, 3])
    assert result[("inst", "rev", "author")] == (4, 4) and result[("paper", "cites", "paper")] == (2, 2)
    assert result[("author", "writes", "paper")] == (1, 2)


def test_labels_use_the_type_spelling_only_for_shared_names():
    assert [relation_label(SCHEMA, r) for r in SCHEMA.relations] == [
        "cites", "writes", "paper___rev___author", "inst___rev___author"]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("cited=3", r"fanouts_per_relation= unknown relation 'cited' \(relations: cites, writes, paper___rev"),
        ("rev=3", r"relation name 'rev' is ambiguous: 2 relations share it; write paper___rev___author or inst"),
        ("paper___x___author=3", "unknown relation 'paper___x___author'"),
        ({("a", "b", "c"): 1}, "unknown relation 'a___b___c'"),
        ("writes=1,author___writes___paper=2", r"relation 'writes' given twice \('1' and '2'\)"),
        ("cites=1/2/3", r"cites: expected 1 or 2 fanouts \(one per hop, as fanouts has\), found 3 \(1/2/3\)"),
        ("cites=0", "fanouts_per_relation= expected integers in 1..2147483647 or -1"),
        ("cites=x", "fanouts_per_relation= expected integers in"),
        ("cites", "expected entries NAME=F or NAME=F1/F2"),
        ("cites=1//2", "expected cites=F or cites=F1/F2"),
        ("cites=1,cites=2", "relation 'cites' given twice"),
        (5, "expected text like writes=5"),
        ({7: 1}, "expected relation names or"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_option(value, match):
    with pytest.raises(OptionError, match=match) as info:
        parse_relation_fanouts(value, SCHEMA, [10, 5])
    assert "\n" not in str(info.value)
    assert "--fanouts-per-relation" in info.value.render(cli=True)


def test_parsed_once_schema_free_then_resolved():
    parsed = RelationFanouts.parse({"cites": "10/5", ("author", "writes", "paper"): 1})
    assert parsed == "cites=10/5,author___writes___paper=1" and RelationFanouts.parse(parsed) is parsed
    assert parsed.entries == (("cites", (10, 5)), ("author___writes___paper", (1,)))
    resolved = parse_relation_fanouts(parsed, SCHEMA, [10, 5])
    assert resolved[("author", "writes", "paper")] == (1, 1) and resolved[("paper", "cites", "paper")] == (10, 5)


def test_bad_base_fanouts_name_fanouts():
    with pytest.raises(OptionError, match="fanouts= expected"):
        parse_relation_fanouts("cites=1", SCHEMA, "a,b")
