# Sourced by the HF conversion tests (ckpt_convert.sh, hf_transformers.sh): the `--set` flags
# that turn configs/gpt2-tiny-cpu.toml into each tiny model variant they convert, with a
# padded vocab (256 -> 288 rows) and Llama 3 rope scaling whose bands all matter.
# tiny_variant_sets VARIANT DATA_GLOB OUT_DIR fills the array `sets`; VARIANT is one of
# tiny_variants: gpt2, llama (GQA 4/2, untied head), llama-tied, llama3.
tiny_variants=(gpt2 llama llama-tied llama3)
tiny_variant_sets() {
  local variant=$1 data=$2 out=$3 arch
  arch=$([ "$variant" = gpt2 ] && echo gpt2 || echo llama)
  sets=(--set "data.train=\"$data\"" --set training.eval_every=0 --set model.arch=$arch
        --set model.layers=2 --set model.hidden=64 --set model.heads=4 --set model.vocab=256 --set model.vocab_multiple=96
        --set model.max_seq_len=32 --set training.seq_len=16 --set training.global_batch=2 --set training.micro_batch=2 --set training.threads=1
        --set training.steps=3 --set lr_schedule.warmup_steps=1 --set "job.out_dir=\"$out\"")
  if [ "$arch" = llama ]; then sets+=(--set model.kv_heads=2 --set model.ffn_hidden=96 --set model.rope_theta=500.0); fi
  if [ "$variant" = llama-tied ]; then sets+=(--set model.tie_embeddings=true); fi
  # head_dim 16, theta 500: wavelengths 6.3 | 13.6, 29.7 | 64.6, ... against 32/4 and 32/1.
  if [ "$variant" = llama3 ]; then
    sets+=(--set 'model.rope_scaling={type="llama3",factor=8.0,low_freq_factor=1.0,high_freq_factor=4.0,original_max_position_embeddings=32}')
  fi
}
