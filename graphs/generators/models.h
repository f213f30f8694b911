// Registration of the built-in generators, one function per source file
// (called explicitly so the linker keeps every generator).
#ifndef GOSIM_GRAPHS_GENERATORS_MODELS_H_
#define GOSIM_GRAPHS_GENERATORS_MODELS_H_

#include "graphs/generators/generators.h"

namespace gosim::graphs::gen {

void RegisterCnnGenerators(GeneratorRegistry& registry);          // inception_v3, resnet
void RegisterAmoebaNetGenerator(GeneratorRegistry& registry);     // amoebanet
void RegisterRnnGenerators(GeneratorRegistry& registry);          // rnnlm, nmt, gnmt
void RegisterTransformerGenerators(GeneratorRegistry& registry);  // bert, transformer_xl
void RegisterWaveNetGenerator(GeneratorRegistry& registry);       // wavenet
void RegisterRegalGenerator(GeneratorRegistry& registry);         // regal_random

}  // namespace gosim::graphs::gen

#endif  // GOSIM_GRAPHS_GENERATORS_MODELS_H_
