"""Response bodies of the endpoints that say how large a model's window is, one per kind of server.

Shapes as the servers send them (fields trimmed to the ones around what we read): vLLM 0.6+ /v1/models,
llama.cpp server /props and /v1/models (b4000+), LM Studio 0.3 /api/v0/models, Ollama 0.6+ /api/ps and
/api/show, OpenRouter /api/v1/models, Groq /openai/v1/models, OpenAI /v1/models.
"""

from __future__ import annotations

from typing import Any

VLLM_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [
        {
            "id": "Qwen/Qwen2.5-Coder-7B-Instruct",
            "object": "model",
            "created": 1733500000,
            "owned_by": "vllm",
            "root": "Qwen/Qwen2.5-Coder-7B-Instruct",
            "parent": None,
            "max_model_len": 32768,
            "permission": [{"id": "modelperm-1", "object": "model_permission", "allow_sampling": True}],
        }
    ],
}
LLAMACPP_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [
        {
            "id": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "object": "model",
            "created": 1733500000,
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768, "n_embd": 896, "n_params": 494032768},
        }
    ],
}
LLAMACPP_PROPS: dict[str, Any] = {
    "default_generation_settings": {
        "id": 0,
        "id_task": -1,
        "n_ctx": 8192,
        "speculative": False,
        "is_processing": False,
        "params": {"n_predict": -1, "temperature": 0.8},
    },
    "total_slots": 1,
    "model_path": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "chat_template": "{%- for message in messages %}...",
    "modalities": {"vision": False},
    "build_info": "b4600-0123abcd",
}
LMSTUDIO_OPENAI_MODELS: dict[str, Any] = {
    "data": [{"id": "qwen2.5-coder-7b-instruct", "object": "model", "owned_by": "organization_owner"}],
    "object": "list",
}
LMSTUDIO_V0_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [
        {
            "id": "qwen2.5-coder-7b-instruct",
            "object": "model",
            "type": "llm",
            "publisher": "lmstudio-community",
            "arch": "qwen2",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded",
            "max_context_length": 32768,
            "loaded_context_length": 4096,
        },
        {
            "id": "text-embedding-nomic-embed-text-v1.5",
            "object": "model",
            "type": "embeddings",
            "state": "not-loaded",
            "max_context_length": 2048,
        },
    ],
}
OLLAMA_OPENAI_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [{"id": "qwen2.5-coder:latest", "object": "model", "created": 1733500000, "owned_by": "library"}],
}
OLLAMA_PS: dict[str, Any] = {
    "models": [
        {
            "name": "qwen2.5-coder:latest",
            "model": "qwen2.5-coder:latest",
            "size": 6654289920,
            "digest": "2b0496514337",
            "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
            "expires_at": "2025-06-01T12:00:00Z",
            "size_vram": 6654289920,
            "context_length": 16384,
        }
    ]
}
OLLAMA_PS_EMPTY: dict[str, Any] = {"models": []}
OLLAMA_SHOW: dict[str, Any] = {
    "license": "Apache License ...",
    "modelfile": "FROM ...",
    "parameters": 'stop                           "<|im_start|>"\nstop                           "<|im_end|>"',
    "template": "{{- if .Messages }}...",
    "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
    "model_info": {
        "general.architecture": "qwen2",
        "general.parameter_count": 7615616512,
        "qwen2.context_length": 32768,
        "qwen2.embedding_length": 3584,
    },
    "capabilities": ["completion", "tools", "insert"],
}
OLLAMA_SHOW_NUM_CTX: dict[str, Any] = {
    **OLLAMA_SHOW,
    "parameters": 'num_ctx                        12288\nstop                           "<|im_end|>"',
}
OPENROUTER_MODELS: dict[str, Any] = {
    "data": [
        {
            "id": "anthropic/claude-3.5-sonnet",
            "name": "Anthropic: Claude 3.5 Sonnet",
            "created": 1718841600,
            "context_length": 200000,
            "architecture": {"modality": "text+image->text", "tokenizer": "Claude"},
            "pricing": {"prompt": "0.000003", "completion": "0.000015"},
            "top_provider": {"context_length": 200000, "max_completion_tokens": 8192, "is_moderated": True},
        }
    ]
}
GROQ_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [
        {
            "id": "llama-3.3-70b-versatile",
            "object": "model",
            "created": 1733447754,
            "owned_by": "Meta",
            "active": True,
            "context_window": 131072,
            "max_completion_tokens": 32768,
        }
    ],
}
OPENAI_MODELS: dict[str, Any] = {
    "object": "list",
    "data": [{"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"}],
}
