// Ready-made models, built from the public layers the way a user would build them:
// mlp, lenet (8x8 or 28x28 input), resnet20 (CIFAR-style, with batch norm), vgg_small, and the
// ImageNet models resnet50 and vgg16 (torchvision's architectures and parameter names).
//
// Parameter names follow PyTorch conventions ("features.0.weight", "layer1.0.conv1.weight").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

struct ModelSpec {
  int64_t in_channels = 1;  // 1 for digits/MNIST, 3 for CIFAR-10
  int64_t image_size = 8;   // square input side
  int64_t num_classes = 10;
};

// Flatten -> Linear(in, h) -> ReLU ... -> Linear(h, classes).
ModulePtr mlp(const ModelSpec& spec, std::vector<int64_t> hidden = {128});
// LeNet: for 28x28 the classic LeNet-5 (conv5-pool-conv5-pool-fc120-fc84); for 8x8 a
// two-conv (3x3) variant; other sizes that pool down to at least 1x1 work too.
ModulePtr lenet(const ModelSpec& spec);
// ResNet-20 (He et al. 2016, CIFAR variant): 3 stages of 3 basic blocks, 16/32/64 channels,
// batch norm, 1x1 projection shortcuts where the shape changes, global average pooling.
ModulePtr resnet20(const ModelSpec& spec);
// A small VGG: three stages of two 3x3 conv + batch norm + ReLU, max-pooled, then a classifier.
ModulePtr vgg_small(const ModelSpec& spec);

// ResNet-50 (He et al. 2016; torchvision's v1.5, the stride in the 3x3 convolution): 25,557,032
// parameters at 1000 classes. image_size >= 32.
ModulePtr resnet50(const ModelSpec& spec);
// VGG-16 (configuration D, no batch norm, torchvision's layout: features, a 7x7 adaptive average
// pool, classifier with dropout): 138,357,544 parameters at 1000 classes. image_size >= 32.
ModulePtr vgg16(const ModelSpec& spec);

// By name: "mlp", "lenet", "resnet20", "vgg_small", "resnet50", "vgg16". ValueError listing the
// names otherwise.
ModulePtr make_model(const std::string& name, const ModelSpec& spec);
std::vector<std::string> model_names();

}  // namespace ember::nn
