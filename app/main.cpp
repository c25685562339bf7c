// hetu: the command line. Defines the subcommands with CLI11 and maps outcomes to exit
// codes: 0 success, 2 usage or config errors (bad flags, bad job file), 1 runtime failures.
// Each subcommand's behaviour lives in its own cmd_*.cpp (see app/commands.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <functional>
#include <string>

#include "app/cmd_data.h"
#include "app/cmd_tokenize.h"
#include "app/commands.h"
#include "lib/util/error.h"

namespace {

using namespace hetu;
using namespace hetu::app;

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// The launcher's rank, read from its environment (no MPI needed): errors that every rank
// hits alike (a bad job file) are printed once, by rank 0.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

void add_config_options(CLI::App& cmd, ConfigOptions& options, bool config_required) {
  auto* config = cmd.add_option("CONFIG", options.config_path, "TOML job file");
  if (config_required) config->required();
  cmd.add_option("--set", options.overrides,
                 "Override one key of the job file, e.g. --set training.steps=100 (repeatable; "
                 "values are TOML: numbers, true, \"text\", [1, 2])")
      ->type_name("TABLE.KEY=VALUE")
      ->allow_extra_args(false);
}

}  // namespace

// Note [OpenMP wait policy]: libgomp's default makes idle threads spin for a while after
// each parallel region. Between our many short kernels, and on machines shared with other
// work, spinning threads steal the core a working thread needs: measured on 2 cores with one
// busy, a tiny GPT-2 step ran 10x slower on 2 threads than with passive waiting. libgomp
// reads the policy when it loads, before main, so hetu sets it and re-executes itself once.
// A user who sets OMP_WAIT_POLICY or GOMP_SPINCOUNT keeps their choice.
static void ensure_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  ::execv("/proc/self/exe", argv);  // returns only on failure: then run with the default policy
}

int main(int argc, char** argv) {
  ensure_passive_openmp_wait(argv);
  CLI::App app{"hetu: train GPT-2 and LLaMA models across heterogeneous GPU clusters from one TOML job file"};
  app.name("hetu");
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  app.fallthrough();  // global flags such as --log-level may follow the subcommand
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "Console and log-file verbosity")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  std::function<int()> selected;

  TrainOptions train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a model as described by a job file (launch with mpirun/srun for several ranks)");
  add_config_options(*train_cmd, train, /*config_required=*/true);
  train_cmd->add_flag("--dry-run", train.dry_run,
                      "Validate the job, check launched ranks against the device groups, print the plan; train nothing");
  train_cmd->add_option("--stop-at-step", train.stop_at_step,
                        "Pause after this optimizer step with a checkpoint (for time-limited allocations); "
                        "running the job again resumes")
      ->check(CLI::NonNegativeNumber);
  train_cmd->add_option("--state-dir", train.state_dir,
                        "Keep this rank's state after every step in DIR/rank-R and resume from the newest state "
                        "found beside DIR (set by hetu launch)");
  train_cmd->callback([&] { selected = [&] { return run_train(train); }; });

  LaunchOptions launch;
  CLI::App* launch_cmd = app.add_subcommand(
      "launch", "Run hetu train under mpirun/srun and supervise it: when a rank dies, drop its device, re-plan and "
                "relaunch from the newest state");
  add_config_options(*launch_cmd, launch, /*config_required=*/true);
  launch_cmd->add_option("--np", launch.supervisor.np, "Ranks of the first launch (one per device of the job)")->required();
  launch_cmd->add_option("--min-np", launch.supervisor.min_np, "Fewest ranks a relaunch may run on (default 1)");
  launch_cmd->add_option("--max-restarts", launch.supervisor.max_restarts, "Relaunches before giving up (default 3)")
      ->check(CLI::NonNegativeNumber);
  launch_cmd->add_option("--launcher", launch.supervisor.launcher, "mpirun (default) or srun")
      ->check(CLI::IsMember({"mpirun", "srun"}));
  launch_cmd->add_option("--launcher-args", launch.supervisor.launcher_args,
                         "Extra words for the launcher, e.g. \"--mpi=pmix --gpu-bind=none\"");
  launch_cmd->add_option("--finish-grace", launch.supervisor.finish_grace_s,
                         "Seconds the launcher may take to exit after the run finished before it is ended (default 30)")
      ->check(CLI::PositiveNumber);
  launch_cmd->add_option("--stop-at-step", launch.supervisor.stop_at_step, "Passed on to hetu train")
      ->check(CLI::NonNegativeNumber);
  launch_cmd->callback([&] { selected = [&] { return run_launch(launch); }; });

  PlanOptions plan;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Search layouts for the job's cluster with the cost model (catalogue estimates); --evaluate: the job's own");
  add_config_options(*plan_cmd, plan, /*config_required=*/true);
  plan_cmd->add_flag("--evaluate", plan.evaluate, "Predict the job's own layout (no search)");
  plan_cmd->add_flag("--exhaustive", plan.exhaustive,
                     "List every layout of the space instead of searching it (up to 200,000 candidates)");
  plan_cmd->add_flag("--json", plan.json, "Print the prediction as JSON (predicted_step_s, predicted_peak_gib per device)");
  plan_cmd->add_option("--top", plan.top, "Rows of the ranked table")->check(CLI::PositiveNumber)->capture_default_str();
  plan_cmd->add_option("--out", plan.out, "Write the best layout as a runnable job file");
  plan_cmd->add_option("--profile", plan.profile, "A hetu profile file (measured types and links); none: catalogue estimates only; default: the CPU types profiled in this process");
  plan_cmd->callback([&] { selected = [&] { return run_plan(plan); }; });

  ProfileOptions profile;
  CLI::App* profile_cmd = app.add_subcommand(
      "profile", "Measure the job's model (per layer, tp, micro-batch), AdamW and links on its cluster: under mpirun one rank per device, or this CPU in one process (emulation applied)");
  add_config_options(*profile_cmd, profile, /*config_required=*/true);
  profile_cmd->add_option("--out", profile.out, "The profile file to write")->capture_default_str();
  profile_cmd->callback([&] { selected = [&] { return run_profile(profile); }; });

  ConfigOptions check;
  CLI::App* config_cmd = app.add_subcommand("config", "Work with job files");
  config_cmd->require_subcommand(1);
  CLI::App* check_cmd = config_cmd->add_subcommand(
      "check", "Validate a job file and print the resolved config (no CONFIG: the embedded default job)");
  add_config_options(*check_cmd, check, /*config_required=*/false);
  check_cmd->callback([&] { selected = [&] { return run_config_check(check); }; });

  BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Measure performance against peers timed in the same run");
  bench_cmd->require_subcommand(1);
  CLI::App* bench_ops_cmd = bench_cmd->add_subcommand(
      "ops", "Kernel throughput: matmul and attention FLOP/s vs a GEMM peak, layer_norm and cross-entropy GB/s vs a "
             "memory copy (CPU or one GPU)");
  bench_ops_cmd->add_option("--threads", bench.threads, "Threads for OpenMP and OpenBLAS (0: HETU_NUM_THREADS or all cores)")
      ->check(CLI::NonNegativeNumber);
  bench_ops_cmd->add_flag("--quick", bench.quick, "Short timings, for a smoke test");
  bench_ops_cmd->add_option("--device", bench.device, "cpu or cuda:N (the GPU to measure)")->capture_default_str();
  bench_ops_cmd->add_option("--dtype", bench.dtype,
                            "Compute dtype: f32, or bf16 on a CUDA device (default: f32 on the CPU, both on a GPU)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  bench_ops_cmd->callback([&] { selected = [&] { return run_bench_ops(bench); }; });
  BenchCommOptions bench_comm;
  CLI::App* bench_comm_cmd = bench_cmd->add_subcommand(
      "comm", "Communicator bandwidth over all ranks (run under mpirun): all_reduce, all_gather, reduce_scatter, repartition");
  bench_comm_cmd->add_option("--iterations", bench_comm.iterations, "Timed calls per op and message size")
      ->check(CLI::PositiveNumber);
  bench_comm_cmd->add_option("--device", bench_comm.device,
                             "cpu (MPI) or cuda:N (NCCL): one rank uses GPU N; several ranks use GPU <local rank> "
                             "of their node (give cuda or cuda:0)")
      ->capture_default_str();
  bench_comm_cmd->callback([&] { selected = [&] { return run_bench_comm(bench_comm); }; });

  VerifyOptions verify;
  CLI::App* verify_cmd = app.add_subcommand(
      "verify", "Compare hetu's model with a PyTorch dump (logits, loss, gradients, AdamW steps); exit 1 beyond tolerance");
  verify_cmd->add_option("REFERENCE", verify.reference, "HDF5 dump (scripts/make_reference.py)")->required();
  verify_cmd->add_flag("--all", verify.all, "List every gradient and parameter, not only the worst");
  verify_cmd->callback([&] { selected = [&] { return run_verify(verify); }; });

  DataPrepareOptions data_prepare;
  ReportOptions report;
  CLI::App* report_cmd = app.add_subcommand(
      "report", "One self-contained HTML page of a run's curves, per-rank times and pipeline timeline (several runs overlaid)");
  report_cmd->add_option("RUN_DIR", report.runs, "Run folders (out_dir of hetu train)")->required()->check(CLI::ExistingDirectory);
  report_cmd->add_option("--out", report.out, "HTML file to write (default: report.html in the first RUN_DIR)");
  report_cmd->add_option("--png", report.png_dir, "Also write each chart as a PNG into this folder");
  report_cmd->callback([&] { selected = [&] { return run_report(report); }; });

  CLI::App* data_cmd = app.add_subcommand("data", "Prepare training data");
  data_cmd->require_subcommand(1);
  CLI::App* data_prepare_cmd = data_cmd->add_subcommand(
      "prepare", "Tokenize text files (one document each) into llm.c token shards: OUT/val_000000.bin holds the "
                 "first --val-tokens tokens, OUT/train_000000.bin, ... the rest");
  data_prepare_cmd->add_option("--tokenizer", data_prepare.tokenizer, "Tokenizer")
      ->check(CLI::IsMember({"byte", "gpt2", "tiktoken"}))
      ->capture_default_str();
  data_prepare_cmd->add_option("--vocab", data_prepare.vocab_dir,
                               "gpt2: the folder with encoder.json and vocab.bpe; tiktoken: the .tiktoken ranks file")
      ->type_name("PATH");
  data_prepare_cmd->add_option("--pattern", data_prepare.pattern, "tiktoken: the built-in pattern (cl100k, o200k, llama3)")
      ->type_name("NAME");
  data_prepare_cmd->add_option("--out", data_prepare.out_dir, "Output folder (created if missing; must hold no .bin file)")
      ->type_name("DIR")
      ->required();
  data_prepare_cmd->add_option("--val-tokens", data_prepare.val_tokens, "Tokens from the start that go to val_000000.bin")
      ->capture_default_str();
  data_prepare_cmd->add_option("--shard-tokens", data_prepare.shard_tokens, "Tokens per train shard")
      ->capture_default_str();
  data_prepare_cmd->add_option("--document-start", data_prepare.document_start,
                               "A regular expression: each line it matches starts a new document (default: one "
                               "document per input)")
      ->type_name("REGEX");
  data_prepare_cmd->add_option("INPUT", data_prepare.inputs, "Text files, one document each ('-': stdin)")->required();
  data_prepare_cmd->callback([&] { selected = [&] { return run_data_prepare(data_prepare); }; });
  DataBalanceOptions data_balance;
  CLI::App* data_balance_cmd = data_cmd->add_subcommand(
      "balance", "Per-replica attention cost of packed documents (max/mean), in-order next to balanced packing");
  data_balance_cmd->add_option("--data", data_balance.data, "Prepared shards (a glob); default: synthetic lengths")
      ->type_name("GLOB");
  data_balance_cmd->add_option("--seq-len", data_balance.seq_len, "Tokens per row")->capture_default_str();
  data_balance_cmd->add_option("--shares", data_balance.shares, "Rows per replica per global batch")
      ->capture_default_str();
  data_balance_cmd->add_option("--documents", data_balance.documents, "Synthetic documents")->capture_default_str();
  data_balance_cmd->add_option("--min-len", data_balance.min_len, "Shortest synthetic document")->capture_default_str();
  data_balance_cmd->add_option("--max-len", data_balance.max_len, "Longest synthetic document")->capture_default_str();
  data_balance_cmd->add_option("--seed", data_balance.seed, "Synthetic lengths' seed")->capture_default_str();
  data_balance_cmd->add_option("--balance-window", data_balance.balance_windows,
                               "data.balance_window values to report, split by commas (e.g. 1,4,8,16)")
      ->capture_default_str();
  data_balance_cmd->add_option("--linear-per-token", data_balance.linear_per_token,
                               "Linear cost per token slot, in L² units (12·hidden)")
      ->capture_default_str();
  data_balance_cmd->callback([&] { selected = [&] { return run_data_balance(data_balance); }; });

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd = app.add_subcommand(
      "tokenize", "Text on stdin to token ids on stdout, or back with --decode (GPT-2 BPE, tiktoken BPE or bytes)");
  tokenize_cmd->add_option("--tokenizer", tokenize.tokenizer,
                           "gpt2 (byte-level BPE, needs --vocab), tiktoken (needs --vocab and --pattern) or byte (id = byte)")
      ->check(CLI::IsMember({"gpt2", "byte", "tiktoken"}))
      ->capture_default_str();
  tokenize_cmd->add_option("--vocab", tokenize.vocab_dir,
                           "gpt2: vocab folder with encoder.json and vocab.bpe (default: $HETU_GPT2_VOCAB); tiktoken: "
                           "the .tiktoken ranks file")
      ->type_name("PATH");
  tokenize_cmd->add_option("--pattern", tokenize.pattern, "tiktoken: the built-in pattern (cl100k, o200k, llama3)")
      ->type_name("NAME");
  tokenize_cmd->add_flag("--allow-special", tokenize.allow_special,
                         "Encode: the tokenizer's special tokens (<|endoftext|>...) in the text become their ids "
                         "(default: plain text)");
  tokenize_cmd->add_flag("--jsonl", tokenize.jsonl,
                         "Line by line: a JSON string per line in, a JSON array of ids out (--decode: the reverse)");
  tokenize_cmd->add_flag("--decode", tokenize.decode, "Token ids in (whitespace-separated), raw text out");
  tokenize_cmd->callback([&] { selected = [&] { return run_tokenize(tokenize); }; });

  GenerateOptions generate;
  CLI::App* generate_cmd = app.add_subcommand("generate", "Sample text from a checkpoint (KV-cached decoding)");
  generate_cmd->add_option("CHECKPOINT", generate.checkpoint, "A step folder, or a run / checkpoints folder (latest)")
      ->required();
  generate_cmd->add_option("--prompt", generate.prompt, "Text to continue");
  generate_cmd->add_option("--max-tokens", generate.max_tokens, "Tokens to generate")->capture_default_str();
  generate_cmd->add_option("--temperature", generate.temperature, "Sampling temperature (0: greedy)")->capture_default_str();
  generate_cmd->add_option("--top-k", generate.top_k, "Sample among the k most likely tokens (0: all)")->capture_default_str();
  generate_cmd->add_option("--seed", generate.seed, "Sampling seed")->capture_default_str();
  generate_cmd->add_option("--vocab", generate.vocab_dir,
                           "GPT-2 vocab folder or tiktoken .tiktoken file (default: the job's data.vocab); a tiktoken "
                           "job's pattern is its data.tokenizer_pattern")
      ->type_name("PATH");
  generate_cmd->add_option("--threads", generate.threads, "CPU threads (0: HETU_NUM_THREADS or all cores)");
  generate_cmd->callback([&] { selected = [&] { return run_generate(generate); }; });

  CkptInspectOptions ckpt_inspect;
  CkptConvertOptions ckpt_convert;
  CkptLogitsOptions ckpt_logits;
  CLI::App* ckpt_cmd = app.add_subcommand("ckpt", "Inspect and convert checkpoints (hetu HDF5, Hugging Face safetensors, llm.c)");
  ckpt_cmd->require_subcommand(1);
  CLI::App* ckpt_inspect_cmd = ckpt_cmd->add_subcommand(
      "inspect", "Step, model, every tensor (dtype, shape, bytes), sharding and checksum status of a checkpoint");
  ckpt_inspect_cmd->add_option("CKPT", ckpt_inspect.checkpoint, "hetu step/run folder or .h5, HF folder or .safetensors, llm.c .bin")
      ->required();
  ckpt_inspect_cmd->add_flag("--json", ckpt_inspect.json, "One JSON object on stdout, for scripts");
  ckpt_inspect_cmd->callback([&] { selected = [&] { return run_ckpt_inspect(ckpt_inspect); }; });
  CLI::App* ckpt_convert_cmd = ckpt_cmd->add_subcommand(
      "convert", "Convert between hetu checkpoints, Hugging Face safetensors (+ config.json) and llm.c gpt2_*.bin files");
  ckpt_convert_cmd->add_option("IN", ckpt_convert.input, "hetu step/run folder or .h5, HF folder or .safetensors, llm.c .bin")
      ->required();
  ckpt_convert_cmd->add_option("OUT", ckpt_convert.output, "New folder (hetu: a checkpoints folder; hf) or file (llmc)")
      ->required();
  ckpt_convert_cmd->add_option("--to", ckpt_convert.to, "Output format (default: hetu for HF and llm.c input)")
      ->check(CLI::IsMember({"hetu", "hf", "llmc"}));
  ckpt_convert_cmd->add_option("--dtype", ckpt_convert.dtype, "Parameter dtype of the output")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  ckpt_convert_cmd->add_option("--max-shard-size", ckpt_convert.max_shard_size,
                               "hf: above this many bytes, write model-0000i-of-0000n.safetensors shards and "
                               "model.safetensors.index.json (e.g. 5GB, 500MB, 2GiB)")
      ->capture_default_str();
  ckpt_convert_cmd->callback([&] { selected = [&] { return run_ckpt_convert(ckpt_convert); }; });
  CLI::App* ckpt_logits_cmd = ckpt_cmd->add_subcommand(
      "logits", "Run a checkpoint (any format) on token ids and save the logits as safetensors, to compare implementations");
  ckpt_logits_cmd->add_option("CKPT", ckpt_logits.checkpoint, "Any checkpoint `ckpt convert` reads")->required();
  ckpt_logits_cmd->add_option("--tokens", ckpt_logits.tokens, "Text file: one sequence of whitespace-separated ids per line")
      ->required();
  ckpt_logits_cmd->add_option("--out", ckpt_logits.out, "Output .safetensors: logits (B, T, vocab) f32, tokens (B, T) i32")
      ->required();
  ckpt_logits_cmd->add_option("--threads", ckpt_logits.threads, "CPU threads (0: HETU_NUM_THREADS or all cores)");
  ckpt_logits_cmd->callback([&] { selected = [&] { return run_ckpt_logits(ckpt_logits); }; });

  CkptReshardOptions ckpt_consolidate, ckpt_reshard;
  CLI::App* ckpt_consolidate_cmd = ckpt_cmd->add_subcommand(
      "consolidate", "Rewrite a sharded hetu checkpoint as one file of whole tensors (optimizer state and metadata kept)");
  ckpt_consolidate_cmd->add_option("IN", ckpt_consolidate.input, "hetu step, checkpoints or run folder")->required();
  ckpt_consolidate_cmd->add_option("OUT", ckpt_consolidate.output, "New (or empty) checkpoints folder")->required();
  ckpt_consolidate_cmd->callback([&] { selected = [&] { return run_ckpt_consolidate(ckpt_consolidate); }; });
  CLI::App* ckpt_reshard_cmd = ckpt_cmd->add_subcommand(
      "reshard", "Rewrite a hetu checkpoint with the boxes another job's ranks load (each rank reads exactly its own)");
  ckpt_reshard_cmd->add_option("IN", ckpt_reshard.input, "hetu step, checkpoints or run folder")->required();
  ckpt_reshard_cmd->add_option("OUT", ckpt_reshard.output, "New (or empty) checkpoints folder")->required();
  ckpt_reshard_cmd->add_option("--config", ckpt_reshard.config, "The job file whose layout to write")->required();
  ckpt_reshard_cmd->add_option("--set", ckpt_reshard.overrides, "Override a key of that job file (repeatable)")
      ->type_name("TABLE.KEY=VALUE");
  ckpt_reshard_cmd->callback([&] { selected = [&] { return run_ckpt_reshard(ckpt_reshard); }; });

  CLI::App* env_cmd = app.add_subcommand("env", "Show build options, BLAS, MPI and the CUDA devices this process sees");
  env_cmd->callback([&] { selected = [] { return run_env(); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);  // prints help/version (code 0) or the usage error
    return code == 0 ? 0 : kExitUsage;
  }

  try {
    train.log_level = check.log_level = launch.log_level = parse_log_level(log_level);
    launch.supervisor.log_level_flag = log_level;
    return selected();
  } catch (const UsageError& error) {
    if (launcher_rank() == 0) std::fprintf(stderr, "hetu: error: %s\n", error.message().c_str());
    return kExitUsage;
  } catch (const Error& error) {
    std::fprintf(stderr, "hetu: error (rank %d): %s [%s]\n", launcher_rank(), error.message().c_str(),
                 error.where().c_str());
    return kExitRuntime;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hetu: error (rank %d): %s\n", launcher_rank(), error.what());
    return kExitRuntime;
  }
}
