"""The trainer harness: each trainer's real code, on CPU, offline but for PyPI, in seconds.

Training output is tested by loading it with the trainers' released code and checking, token by
token, what they train. The parts (fixtures in `fixtures.py`, registered for every test):

- `chat_tokenizers.trainer_tokenizer(name)` / fixture `chat_tokenizer`: the bundled DeepSeek
  tokenizer.json with a real chat template (qwen2.5, qwen3, deepseek-v3.1, llama3.1-style) and its
  markers as single special tokens;
- `model.tiny_model(tokenizer)`: a seeded 2-layer Qwen2 over that vocabulary;
- `trl_runner.run_sft` / fixture `trl_sft`: TRL 1.16's `SFTTrainer`, its prepared rows (and 2 steps);
- `ownership.token_owners` (+ `loss_by_message`, `trained_messages`, `assert_loss_covers`): each
  token's message, found by rendering prefixes, and the loss per message;
- `rendered_calls.rendered_calls` / `assert_calls_are_objects`: tool calls as a template rendered them;
- `llamafactory_runner.llamafactory_dataset`, `verl_runner.verl_items`,
  `axolotl_runner.axolotl_tokenize` / fixtures `llamafactory`, `verl`, `axolotl`: those trainers'
  data code from their wheels (`wheels.py`, with `stubs.py` for unrelated imports).

`test_harness.py` (marker `trainers`) proves the facts the product's tests rely on.
"""
