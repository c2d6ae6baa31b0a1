//! Layers with PyTorch's argument names, shapes and default initialisation.

mod attention;
mod batch_norm_fused;
mod bilinear;
mod conv;
mod dropout;
mod embedding;
mod fused;
mod layer_norm;
mod linear;
mod lstm_fused;
mod norm;
mod pool;
mod positional;
mod rnn;
mod sdpa;
mod transformer;

pub use attention::{
    AttentionArgs, MultiheadAttention, MultiheadAttentionConfig, generate_square_subsequent_mask,
};
pub use bilinear::Bilinear;
pub use conv::{Conv1d, Conv2d, ConvOptions, ConvTranspose2d, SpatialSize};
pub use dropout::{Dropout, dropout};
pub use embedding::Embedding;
pub use layer_norm::LayerNorm;
pub use linear::Linear;
pub use norm::{BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm, RMSNorm};
pub use pool::{AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d};
pub use positional::{LearnedPositionalEmbedding, SinusoidalPositionalEmbedding};
pub use rnn::{GRU, LSTM, RNN, RnnConfig, RnnNonlinearity};
pub use sdpa::{SdpaArgs, scaled_dot_product_attention};
pub use transformer::{
    TransformerActivation, TransformerDecoderLayer, TransformerEncoderLayer, TransformerLayerConfig,
};
