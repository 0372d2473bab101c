"""Writes a small Hugging Face model folder (tokenizer, tokenizer config, model config; no weights) that
Dynamo's simulated engine ("mocker") needs in order to count tokens. Offline, well under a second.
Usage: python tiny_tokenizer.py OUT_DIR"""
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

# A byte-level BPE trained on a little English: any text tokenizes, at roughly real-model token counts.
vocabulary = """the a an of and to in is it that for on with as was were be been are this these those at by
from or not but what all when we you he she they them their there here can will would should could may
plan step task part agent tool answer question result first next then last time day week weather city
please tell me about write read count word words list make find check again more less good best why how
session dialog fork parent child lead team merge split reply review weakest point revise draft polish""".split()
sentences = [" ".join(vocabulary[i:] + vocabulary[:i]) for i in range(len(vocabulary))]
special = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]

tokenizer = Tokenizer(models.BPE(unk_token=None))
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
tokenizer.train_from_iterator(
    sentences * 3,
    trainer=trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    ),
)
tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
tokenizer.save(os.path.join(out, "tokenizer.json"))

ids = {name: tokenizer.token_to_id(name) for name in ("<s>", "</s>", "<pad>")}
template = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] if m['role'] in ['system', 'assistant'] else 'user' }}|>"
    "{{ m['content'] if m['content'] is string else '' }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def write(name, value):
    with open(os.path.join(out, name), "w") as f:
        json.dump(value, f, indent=1)


write("tokenizer_config.json", {
    "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "chat_template": template,
    "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>",
    "add_bos_token": False, "add_eos_token": False,
})
write("config.json", {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": tokenizer.get_vocab_size(),
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 16, "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
    "bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"], "pad_token_id": ids["<pad>"],
    "tie_word_embeddings": True,
})
write("generation_config.json", {
    "bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"], "pad_token_id": ids["<pad>"],
})
