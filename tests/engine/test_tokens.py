from __future__ import annotations

from difill.engine.tokens import block_tokens, encode, encode_prefix_window, encode_suffix_window


def test_special_token_text_in_a_file_stays_plain_text(loaded):
    tokens = encode(loaded.tokenizer, "marker = '<|fill|>'")
    assert loaded.ids.filler[0] not in tokens


def test_round_trip_keeps_tabs_crlf_and_non_ascii(loaded):
    text = "\tif x:\r\n\t\treturn '한국어 😀'\r\n"
    assert loaded.tokenizer.decode(encode(loaded.tokenizer, text)) == text


def test_prefix_window_starts_with_bos_at_file_start(loaded):
    tokens = encode_prefix_window(loaded.tokenizer, loaded.ids, "x = 1\n", budget=64)
    assert tokens[0] == loaded.ids.bos


def test_prefix_window_respects_the_budget_and_starts_with_bos_far_from_file_start(loaded):
    """Gemma models expect <bos> at position 0; a window cut from a long file must still have it."""
    tokens = encode_prefix_window(loaded.tokenizer, loaded.ids, "value = 1\n" * 500, budget=64)
    assert 0 < len(tokens) <= 64
    assert tokens[0] == loaded.ids.bos and tokens.count(loaded.ids.bos) == 1


def test_prefix_window_is_stable_while_typing(loaded):
    """Typing at the end must not shift the kept window, or the prefix cache is useless."""
    base = "".join(f"line_{i} = {i}\n" for i in range(300))
    a = encode_prefix_window(loaded.tokenizer, loaded.ids, base + "x", budget=100)
    b = encode_prefix_window(loaded.tokenizer, loaded.ids, base + "xy", budget=100)
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    assert common >= len(a) - 2


def test_suffix_window_says_whether_it_is_complete(loaded):
    tokens, complete = encode_suffix_window(loaded.tokenizer, ")\n", budget=16)
    assert complete and tokens
    tokens, complete = encode_suffix_window(loaded.tokenizer, "y = 2\n" * 100, budget=8)
    assert not complete and len(tokens) == 8


def test_a_context_block_follows_bos_and_takes_its_room_from_the_prefix(loaded):
    tok, ids = loaded.tokenizer, loaded.ids
    prefix = "".join(f"value_{i} = {i}\n" for i in range(300))
    block = "# Path: lib/geo.py\n# def area(r):\n#     return 3.14 * r * r\n"
    block_ids = encode(tok, block)
    budget = 2 * len(block_ids) + 20
    plain = encode_prefix_window(tok, ids, prefix, budget=budget)
    with_block = encode_prefix_window(tok, ids, prefix, budget=budget, block=block_tokens(tok, block, budget))
    assert with_block[: 1 + len(block_ids)] == [ids.bos, *block_ids]
    assert len(with_block) <= budget and len(plain) <= budget
    assert with_block[-8:] == plain[-8:]  # the code just before the cursor stays
    assert len(with_block) - len(block_ids) < len(plain)  # the block's room came out of the prefix


def test_a_context_block_over_half_the_budget_is_left_out_whole(loaded):
    tok, ids = loaded.tokenizer, loaded.ids
    block = "".join(f"# line {i} of a long snippet\n" for i in range(40))
    assert len(encode(tok, block)) > 32
    assert encode_prefix_window(
        tok, ids, "x = 1\n", budget=64, block=block_tokens(tok, block, 64)
    ) == encode_prefix_window(tok, ids, "x = 1\n", budget=64)
    assert block_tokens(tok, block, 64) == [] and block_tokens(tok, block, 4096) == encode(tok, block)
