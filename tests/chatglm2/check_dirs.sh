#!/usr/bin/env bash
# m40-chat on Hugging Face-style directories (tests/chatglm2/make_dirs.py):
# the sharded checkpoint with config.json gives the fixture's greedy ids;
# each broken copy fails with a message naming the file or field.
#   tests/chatglm2/check_dirs.sh M40_CHAT OUT_DIR
set -u
chat=$1 out=$2
python3 "$(dirname "$0")/make_dirs.py" "$out" || exit 1
fail=0
expect() { # dir, regex of the message (or of stdout for good*, which must load), more m40-chat args
    local msg rc d=$1 re=$2
    shift 2
    msg=$("$chat" --cpu --model "$out/$d" --ids 64,17,250,3,99,42,7,128,5,211,33 --greedy \
          --max-new-tokens 12 --print-ids --chunk 4 "$@" 2>&1); rc=$?
    set -- "$d" "$re"
    case $1 in good*) [ $rc -ne 0 ] && { fail=1; echo "FAIL $1: rc $rc: $msg"; return; } ;;
    *) [ $rc -ne 1 ] && { fail=1; echo "FAIL $1: rc $rc (want 1): $msg"; return; } ;; esac
    if grep -qE "$2" <<<"$msg"; then echo "ok   $1: $msg"; else fail=1; echo "FAIL $1: '$msg' !~ /$2/"; fi
}
expect good "^55,243,243,243,243,243,50,60,53,5,243,287$"
expect bad_config "config says ffn_hidden_size 256, the tensors 200"
expect missing_shard "names shard .*model-00002-of-00002.safetensors, which is missing"
expect truncated "model-00001-of-00002.safetensors: .*truncated"
expect bin_only "PyTorch .bin shards: convert them once with examples/chatglm2/convert_bin.py"
expect shard_path "tensor '.*' names a bad shard"
expect many_shards "more than 256 shards"
expect hidden_wrap "hidden_size must be an integer in 1..1048576"
expect bad_eps "layernorm_epsilon must be a number in"
expect bad_vocab "config says padded_vocab_size 301, the tensors 300"
expect bad_heads "disagree with the tensors"
expect qbits_fp16 "config.json says quantization_bit 4, the tensors are not quantized \\('transformer.encoder.layers.0.self_attention.dense.weight' is F16 \\[128,512\\]\\)"
expect good_int4 "^[0-9]+(,[0-9]+){11}$"
expect qbits_8_int4 "config.json says quantization_bit 8, the tensors are packed int4 \\('transformer.encoder.layers.0.self_attention.dense.weight' is I8 \\[128,256\\]\\)"
expect qbits_3 "config.json: quantization_bit 3: 0 \\(none\\), 4 or 8"
expect norm_short "input_layernorm.weight' is F16 \\[127\\], expected F16, BF16 or F32 \\[128\\]"
expect norm_2d "input_layernorm.weight' is F16 \\[128,1\\], expected F16, BF16 or F32 \\[128\\]"
expect meta_eps "metadata layernorm_epsilon = '0.7' is not a number"
expect extra_layer "unknown tensor 'transformer.encoder.layers.7.mlp.extra'" --devices 0,1 --split layer
# --save: the checkpoint quantized at load, written once, loaded as one
# mmap with the same ids as quantizing again; another --dtype is refused
ids=64,17,250,3,99,42,7,128,5,211,33
a=$("$chat" --cpu --model "$out/good" --dtype int4g128 --ids $ids --greedy --max-new-tokens 12 \
    --print-ids --save "$out/saved.safetensors" 2>/dev/null)
b=$("$chat" --cpu --model "$out/saved.safetensors" --dtype int4g128 --ids $ids --greedy \
    --max-new-tokens 12 --print-ids 2>&1)
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   save/load int4g128: $b"; else fail=1; echo "FAIL save/load: '$a' vs '$b'"; fi
# --dtype auto (the default) loads a saved or official quantized checkpoint
# as its own format: the same ids as naming it
c=$("$chat" --cpu --model "$out/saved.safetensors" --ids $ids --greedy --max-new-tokens 12 --print-ids 2>&1)
if [ "$c" = "$a" ]; then echo "ok   saved int4g128, no --dtype: $c"; else fail=1; echo "FAIL saved int4g128, no --dtype: '$c' vs '$a'"; fi
a8=$("$chat" --cpu --model "$out/good" --dtype int8 --ids $ids --greedy --max-new-tokens 12 \
     --print-ids --save "$out/saved8.safetensors" 2>/dev/null)
c=$("$chat" --cpu --model "$out/saved8.safetensors" --ids $ids --greedy --max-new-tokens 12 --print-ids 2>&1)
if [ -n "$a8" ] && [ "$c" = "$a8" ]; then echo "ok   saved int8, no --dtype: $c"; else fail=1; echo "FAIL saved int8, no --dtype: '$c' vs '$a8'"; fi
a4=$("$chat" --cpu --model "$out/good_int4" --dtype int4 --ids $ids --greedy --max-new-tokens 12 --print-ids 2>&1)
c=$("$chat" --cpu --model "$out/good_int4" --dtype auto --ids $ids --greedy --max-new-tokens 12 --print-ids 2>&1)
if [ "$c" = "$a4" ]; then echo "ok   official int4, --dtype auto = int4: $c"; else fail=1; echo "FAIL official int4 auto: '$c' vs '$a4'"; fi
msg=$("$chat" --cpu --model "$out/saved.safetensors" --dtype fp16 --ids 1,2 2>&1)
if [ $? = 1 ] && grep -q "is quantized (I8, with scales)" <<<"$msg"; then echo "ok   saved int4g128 as fp16: $msg"
else fail=1; echo "FAIL saved as fp16: $msg"; fi
# broken copies of the saved file: a BF16 scale, codes one column short
python3 "$(dirname "$0")/make_dirs.py" --edit-saved "$out/saved.safetensors" "$out" || exit 1
for b in saved_scale_bf16 saved_codes_short; do
    msg=$("$chat" --cpu --model "$out/$b.safetensors" --dtype int4g128 --ids 1,2 2>&1); rc=$?
    if [ $rc = 1 ] && grep -q "are not an int4 weight" <<<"$msg"; then echo "ok   $b: $msg"
    else fail=1; echo "FAIL $b: rc $rc: $msg"; fi
done
# a --save that fails leaves what was at the path as it was, and no
# temporary: onto a directory (rename refuses), and a write cut short by
# the file-size limit over an existing file; a good one replaces the file
mkdir -p "$out/savedir"; echo keep > "$out/keep.safetensors"
msg=$("$chat" --cpu --model "$out/good" --ids 1,2 --max-new-tokens 1 --save "$out/savedir" 2>&1); rc=$?
if [ $rc = 1 ] && [ -d "$out/savedir" ] && grep -q "Is a directory" <<<"$msg"; then echo "ok   save onto a directory: $msg"
else fail=1; echo "FAIL save onto a directory: rc $rc, $(ls -ld "$out/savedir" 2>&1): $msg"; fi
msg=$( (trap '' XFSZ; ulimit -f 8; "$chat" --cpu --model "$out/good" --ids 1,2 --max-new-tokens 1 \
        --save "$out/keep.safetensors") 2>&1); rc=$?
if [ $rc = 1 ] && [ "$(cat "$out/keep.safetensors")" = keep ] && grep -q "writing failed" <<<"$msg"; then
    echo "ok   save cut short: $msg"
else fail=1; echo "FAIL save cut short: rc $rc, the file now $(wc -c < "$out/keep.safetensors") bytes: $msg"; fi
msg=$("$chat" --cpu --model "$out/good" --ids 1,2 --max-new-tokens 1 --save "$out/keep.safetensors" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(wc -c < "$out/keep.safetensors")" -gt 1000 ]; then echo "ok   save over a file: $msg"
else fail=1; echo "FAIL save over a file: rc $rc: $msg"; fi
tmps=$(ls "$out" | grep -c '\.tmp')
if [ "$tmps" = 0 ]; then echo "ok   no temporaries left"; else fail=1; echo "FAIL temporaries left: $(ls "$out")"; fi
exit $fail
