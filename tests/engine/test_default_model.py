"""The model shipped inside the package: it loads, and fills held-out code to something that parses.

The cases are rest-of-line holes cut (seeded) from the held-out split, trimmed to a few lines of
context, kept where the file parses with the original middle.  `difill eval` measures quality on
hundreds of cases; this is CI's quick check that the packaged weights work end to end.
"""

from __future__ import annotations

import pytest

from difill.engine.api import FillOptions
from difill.engine.infill import InfillEngine
from difill.engine.model import DEFAULT_MODEL_DIR, load_model
from difill.engine.tokens import encode
from difill.text.syntax import parses

HELD_OUT_CASES = [
    (
        "    'y'        #  0x79 -> LATIN SMALL LETTER Y\n    'z'        #  0x7A -> LATIN SMALL LETTER Z\n    '{'        #  0x7B -> LEFT CURLY BRACKET\n    '|'        #  0x7C -> VERTICAL LINE\n    '}'        #  0x7D -> RIGHT CURLY BRACKET\n    '~'        #  0x7E -> TILDE\n    '\\x7f'     #  0x7F -> DELETE\n    '\\u0402'   #  0x80 -> CYRILLIC CAPITAL LETTER DJE\n    '\\u0403'   #  0x81 -> CYRILLIC CAPITAL LETTER GJE\n    '\\u201a'   #  0x82 -> SINGLE LOW-9 QUOTATION MARK\n    '\\u0453'   #  0x83 -> CYRILLIC SMALL LETTER GJE\n    '\\u201e'   #  0x84 -> DOUBLE LOW-9 QUOTATION MARK\n    '\\u2026'   #  0x85 -> HORIZONTAL ",
        "\n    '\\u2020'   #  0x86 -> DAGGER\n    '\\u2021'   #  0x87 -> DOUBLE DAGGER\n    '\\u20ac'   #  0x88 -> EURO SIGN\n    '\\u2030'   #  0x89 -> PER MILLE SIGN\n    '\\u0409'   #  0x8A -> CYRILLIC CAPITAL LETTER LJE\n    '\\u2039'   #  0x8B -> SINGLE LEFT-POINTING ANGLE QUOTATION MARK\n",
    ),
    (
        "    'i'        #  0x69 -> LATIN SMALL LETTER I\n    'j'        #  0x6A -> LATIN SMALL LETTER J\n    'k'        #  0x6B -> LATIN SMALL LETTER K\n    'l'        #  0x6C -> LATIN SMALL LETTER L\n    'm'        #  0x6D -> LATIN SMALL LETTER M\n    'n'        #  0x6E -> LATIN SMALL LETTER N\n    'o'        #  0x6F -> LATIN SMALL LETTER O\n    'p'        #  0x70 -> LATIN SMALL LETTER P\n    'q'        #  0x71 -> LATIN SMALL LETTER Q\n    'r'        #  0x72 -> LATIN SMALL LETTER R\n    's'        #  0x73 -> LATIN SMALL LETTER S\n    't'        #  0x74 -> LATIN SMALL LETTER T\n    'u'    ",
        "\n    'v'        #  0x76 -> LATIN SMALL LETTER V\n    'w'        #  0x77 -> LATIN SMALL LETTER W\n    'x'        #  0x78 -> LATIN SMALL LETTER X\n    'y'        #  0x79 -> LATIN SMALL LETTER Y\n    'z'        #  0x7A -> LATIN SMALL LETTER Z\n    '{'        #  0x7B -> LEFT CURLY BRACKET\n",
    ),
    (
        '                        trailing_dot = b"."\n\n            result = []\n            for label in labels:\n                result.append(alabel(label))\n                if size:\n                    size += 1\n                size += len(label)\n\n            result_bytes = b".".join(result) + trailing_dot\n            size += len(trailing_dot)\n\n        # Mirror encode(): the whole name may not exceed 253 octets, or 254\n        # when it ends with a dot. Until the input is final a trailing dot\n        # may still arrive, so only the 254-octet ceiling applies before then.\n        self._emitted ',
        '\n        if result_bytes:\n            self._trailing_dot = result_bytes.endswith(b".")\n        may_end_with_dot = self._trailing_dot or not final\n        if self._emitted > _max_domain_length + may_end_with_dot:\n            raise IDNAError("Domain too long", code="domain_too_long")\n',
    ),
    (
        '\n    def __len__(self):\n        return 4\n\n    @property\n    def _original_line(self):\n        # Returns the line as-is from the source, without modifying whitespace.\n        self.line\n        return self._line\n\n    @property\n    def line(self):\n        if self._line is None:\n            if self.lineno is None:\n                return None\n            self._line = linecache.getline(self.filename, self.lineno)\n        return self._line.strip()\n\n\ndef walk_stack(f):\n    """Walk a stack yielding the frame and line number for each frame.\n\n    This will follow f.f_back from the given fram',
        '\n    current stack is used. Usually used with StackSummary.extract.\n    """\n    if f is None:\n        f = sys._getframe().f_back.f_back.f_back.f_back\n    while f is not None:\n        yield f, f.f_lineno\n        f = f.f_back\n\n\ndef walk_tb(tb):\n',
    ),
]


@pytest.fixture(scope="module")
def engine():
    return InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu"))


def test_shipped_model_is_in_the_package():
    assert (DEFAULT_MODEL_DIR / "config.json").is_file()
    weights = list(DEFAULT_MODEL_DIR.glob("*.safetensors"))
    assert weights and sum(w.stat().st_size for w in weights) <= 60 * 2**20
    assert (DEFAULT_MODEL_DIR / "tokenizer.json").is_file()
    assert (DEFAULT_MODEL_DIR / "MODEL.md").is_file()


def test_shipped_model_fills_held_out_code_to_something_that_parses(engine):
    parsed = 0
    for prefix, suffix in HELD_OUT_CASES:
        result = engine.fill(
            prefix, suffix, FillOptions(max_hole_tokens=24, single_line=True, language="python")
        )
        parsed += bool(result.text) and bool(parses(prefix + result.text + suffix, "python"))
    # The shipped model parses in ~47% of held-out rest-of-line cases (MODEL.md); 2 of 4 is the floor.
    assert parsed >= 2, f"only {parsed} of {len(HELD_OUT_CASES)} fills parse"


def test_engine_reports_its_stats(engine):
    options = FillOptions(max_hole_tokens=8)
    result = engine.fill("import os\n\npath = os.", "\n", options)
    stats = result.stats
    assert result.text, "the shipped model wrote nothing after 'os.'"
    assert 1 <= stats.decoder_forwards == stats.steps <= options.max_steps
    # The stats describe the chosen middle, so they must agree with the text returned.
    assert stats.hole_tokens == len(encode(engine.tokenizer, result.text)) > 0
    assert stats.tokens_per_forward == pytest.approx(stats.hole_tokens / stats.decoder_forwards)
    assert stats.hole_length == result.candidates[0].hole_length
    assert stats.candidates == len(options.candidate_lengths())
    assert stats.prefix_tokens > 0
    # total_ms times the whole fill, which runs the encoder and then the decoder inside it.
    assert stats.encoder_ms > 0 and stats.decoder_ms > 0
    assert stats.total_ms >= stats.encoder_ms + stats.decoder_ms - 1e-6


def test_the_shipped_model_names_its_ghost_text_cut_and_ship_keeps_it(tmp_path):
    import json

    from lab.commands import ghost_text_cut

    assert 0.0 < load_model(DEFAULT_MODEL_DIR, device="cpu").min_token_prob < 1.0

    def config_dir(name, meta):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"difill": meta}))
        return d

    run = config_dir("run", {"max_prefix_tokens": 256})  # a run started before the cut existed
    tuned = config_dir("tuned", {"min_token_prob": 0.3})
    shipped = config_dir("shipped", {"min_token_prob": 0.25})
    assert ghost_text_cut(run, shipped, None) == 0.25  # carried over from the weights it replaces
    assert ghost_text_cut(tuned, shipped, None) == 0.3  # the source's own wins
    assert ghost_text_cut(run, shipped, 0.1) == 0.1  # a value chosen now wins over both
    assert ghost_text_cut(run, config_dir("bare", {}), None) is None
    with pytest.raises(SystemExit):
        ghost_text_cut(run, shipped, 1.5)
