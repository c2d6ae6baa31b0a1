//! The configurations of the zoo's tiny test models, as `scripts/gen_model_zoo_fixtures.py` builds
//! them in `transformers` and `torchvision` (the fixtures' weights have these shapes). Shared by
//! this crate's tests and the ONNX export's (`crates/nabla-onnx/tests/cases`).

#![allow(dead_code)]

use nabla_models::{BertConfig, Gpt2Config, ResNetConfig, VitConfig};

/// The tiny ResNet of `resnet_basic` (basic blocks) or `resnet_bottleneck`.
pub fn resnet_config(bottleneck: bool) -> ResNetConfig {
    let (layers, base_width) = if bottleneck {
        ([1, 1, 2, 1], 2)
    } else {
        ([2, 1, 1, 1], 4)
    };
    ResNetConfig {
        layers,
        bottleneck,
        num_classes: 5,
        in_channels: 3,
        base_width,
        small_images: false,
    }
}

/// The tiny GPT-2 of `gpt2_tiny`.
pub fn gpt2_config() -> Gpt2Config {
    Gpt2Config {
        vocab_size: 64,
        n_positions: 16,
        n_embd: 32,
        n_layer: 2,
        n_head: 4,
        layer_norm_epsilon: 1e-5,
    }
}

/// The tiny BERT of `bert_tiny`.
pub fn bert_config() -> BertConfig {
    BertConfig {
        vocab_size: 64,
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 48,
        max_position_embeddings: 16,
        ..BertConfig::from_name("bert-base-uncased").expect("a published name")
    }
}

/// The tiny ViT of `vit_tiny`.
pub fn vit_config() -> VitConfig {
    VitConfig {
        image_size: 16,
        patch_size: 4,
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        intermediate_size: 48,
        ..VitConfig::from_name("vit-base", 5).expect("a published name")
    }
}
