"""MultiheadAttention with PyTorch 1.13's arguments, attributes and parameter names (C++:
nn/attention.h; the computation is multi_head_attention_forward of autograd/attention.h)."""
from .. import _C
from .layers import CppModule, _attrs, _place


class MultiheadAttention(CppModule):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        kdim = kdim if kdim is not None else embed_dim
        vdim = vdim if vdim is not None else embed_dim
        super().__init__(_C._MultiheadAttention(embed_dim, num_heads, dropout, bias, add_bias_kv,
                                                add_zero_attn, kdim, vdim, batch_first))
        same = kdim == embed_dim and vdim == embed_dim
        _attrs(self, embed_dim=embed_dim, kdim=kdim, vdim=vdim, _qkv_same_embed_dim=same,
               num_heads=num_heads, dropout=dropout, batch_first=batch_first,
               head_dim=embed_dim // num_heads, add_zero_attn=add_zero_attn)
        # PyTorch's names that are None here.
        for name in (("q_proj_weight", "k_proj_weight", "v_proj_weight") if same
                     else ("in_proj_weight",)):
            self._parameters.setdefault(name, None)
        for name in ("in_proj_bias", "bias_k", "bias_v"):
            self._parameters.setdefault(name, None)
        _place(self, device, dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True):
        return _C._mha_forward(self._cpp, query, key, value, key_padding_mask, need_weights,
                               attn_mask, average_attn_weights)

