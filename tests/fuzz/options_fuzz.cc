// Every option's value as srun's callback gets it, the PYXIS_/CRISP_ variables
// of the job's environment, and plugstack.conf's arguments.
#include "spank/options.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = crisp::fuzz::parts(data, size, 3);
  const auto& defs = crisp::option_defs();
  const crisp::OptionDef& d = defs[static_cast<unsigned char>(in[0].empty() ? 0 : in[0][0]) % defs.size()];
  (void)crisp::validate_option(d.key, in[1]);
  crisp::RawOptions raw;
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    if (name.find(d.key) != std::string::npos) return in[1];
    return std::nullopt;
  };
  if (crisp::apply_environment(raw, lookup)) (void)crisp::validate_options(raw, crisp::PluginConfig{});
  (void)crisp::parse_plugin_args({in[2], in[1]});
  return 0;
}
