#include "nn/models.h"

#include "autograd/activation.h"
#include "autograd/functions.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/linear.h"

namespace ember::nn {

namespace {

void check_spec(const ModelSpec& s, const char* model, int64_t min_size) {
  EMBER_CHECK_VALUE(s.in_channels > 0 && s.num_classes > 1 && s.image_size >= min_size, model,
                    ": expected in_channels > 0, num_classes > 1 and image_size >= ", min_size,
                    ", got ", s.in_channels, ", ", s.num_classes, ", ", s.image_size);
}

class Classifier : public Module {
 public:
  Classifier(std::string name, std::shared_ptr<Sequential> features,
             std::shared_ptr<Sequential> classifier)
      : name_(std::move(name)) {
    features_ = register_module("features", std::move(features));
    classifier_ = register_module("classifier", std::move(classifier));
  }
  Tensor forward(const Tensor& x) override { return classifier_->forward(features_->forward(x)); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::shared_ptr<Sequential> features_, classifier_;
};

// conv3x3-bn-relu-conv3x3-bn, plus the input (projected when the shape changes), then relu.
class BasicBlock : public Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride) {
    conv1_ = register_module(
        "conv1",
        std::make_shared<Conv2d>(in, out, 3, Conv2dOptions().stride(stride).padding(1), false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(out));
    conv2_ = register_module(
        "conv2", std::make_shared<Conv2d>(out, out, 3, Conv2dOptions().padding(1), false));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(out));
    if (stride != 1 || in != out)
      shortcut_ = register_module(
          "shortcut",
          std::make_shared<Sequential>(std::vector<ModulePtr>{
              std::make_shared<Conv2d>(in, out, 1, Conv2dOptions().stride(stride), false),
              std::make_shared<BatchNorm2d>(out)}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu(bn1_->forward(conv1_->forward(x)));
    h = bn2_->forward(conv2_->forward(h));
    return relu(add(h, shortcut_ ? shortcut_->forward(x) : x));
  }
  std::string name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> shortcut_;
};

class ResNet : public Module {
 public:
  explicit ResNet(const ModelSpec& s) {
    conv1_ = register_module(
        "conv1", std::make_shared<Conv2d>(s.in_channels, 16, 3, Conv2dOptions().padding(1), false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(16));
    int64_t in = 16;
    const int64_t widths[] = {16, 32, 64};
    for (int stage = 0; stage < 3; ++stage) {
      auto layer = std::make_shared<Sequential>();
      for (int b = 0; b < 3; ++b) {
        layer->push_back(
            std::make_shared<BasicBlock>(in, widths[stage], stage > 0 && b == 0 ? 2 : 1));
        in = widths[stage];
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", std::make_shared<Linear>(64, s.num_classes));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu(bn1_->forward(conv1_->forward(x)));
    for (auto& l : layers_) h = l->forward(h);
    h = adaptive_avg_pool2d(h, {1, 1});
    return fc_->forward(reshape(h, {h.shape()[0], 64}));
  }
  std::string name() const override { return "ResNet20"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::vector<std::shared_ptr<Sequential>> layers_;
  std::shared_ptr<Linear> fc_;
};

// ResNet-50's block (torchvision's v1.5): conv1x1-bn-relu, conv3x3 (the stride here)-bn-relu,
// conv1x1 to 4 x planes-bn, plus the input (through `downsample` when the shape changes), relu.
class Bottleneck : public Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride) {
    const int64_t out = planes * kExpansion;
    conv1_ =
        register_module("conv1", std::make_shared<Conv2d>(in, planes, 1, Conv2dOptions(), false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
    conv2_ = register_module(
        "conv2", std::make_shared<Conv2d>(planes, planes, 3,
                                          Conv2dOptions().stride(stride).padding(1), false));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
    conv3_ =
        register_module("conv3", std::make_shared<Conv2d>(planes, out, 1, Conv2dOptions(), false));
    bn3_ = register_module("bn3", std::make_shared<BatchNorm2d>(out));
    if (stride != 1 || in != out)
      downsample_ = register_module(
          "downsample",
          std::make_shared<Sequential>(std::vector<ModulePtr>{
              std::make_shared<Conv2d>(in, out, 1, Conv2dOptions().stride(stride), false),
              std::make_shared<BatchNorm2d>(out)}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu(bn1_->forward(conv1_->forward(x)));
    h = relu(bn2_->forward(conv2_->forward(h)));
    h = bn3_->forward(conv3_->forward(h));
    return relu(add(h, downsample_ ? downsample_->forward(x) : x));
  }
  std::string name() const override { return "Bottleneck"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> downsample_;
};

// ResNet-50 (He et al. 2016, ImageNet): a 7x7/2 stem and 3x3/2 max pool, four stages of 3, 4,
// 6 and 3 bottlenecks (64, 128, 256, 512 planes; the first of each later stage strides 2),
// global average pooling, fc. Parameter names as torchvision's ("layer1.0.downsample.0.weight").
class ResNet50 : public Module {
 public:
  explicit ResNet50(const ModelSpec& s) {
    conv1_ = register_module("conv1",
                             std::make_shared<Conv2d>(s.in_channels, 64, 7,
                                                      Conv2dOptions().stride(2).padding(3), false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(64));
    pool_ = register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
    int64_t in = 64;
    const int64_t planes[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; ++stage) {
      auto layer = std::make_shared<Sequential>();
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        layer->push_back(
            std::make_shared<Bottleneck>(in, planes[stage], stage > 0 && b == 0 ? 2 : 1));
        in = planes[stage] * Bottleneck::kExpansion;
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", std::make_shared<Linear>(in, s.num_classes));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = pool_->forward(relu(bn1_->forward(conv1_->forward(x))));
    for (auto& l : layers_) h = l->forward(h);
    h = adaptive_avg_pool2d(h, {1, 1});
    return fc_->forward(reshape(h, {h.shape()[0], h.shape()[1]}));
  }
  std::string name() const override { return "ResNet50"; }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<MaxPool2d> pool_;
  std::vector<std::shared_ptr<Sequential>> layers_;
  std::shared_ptr<Linear> fc_;
};

}  // namespace

ModulePtr mlp(const ModelSpec& s, std::vector<int64_t> hidden) {
  check_spec(s, "mlp", 1);
  auto features = std::make_shared<Sequential>();
  features->push_back(std::make_shared<Flatten>());
  int64_t in = s.in_channels * s.image_size * s.image_size;
  for (int64_t h : hidden) {
    features->push_back(std::make_shared<Linear>(in, h));
    features->push_back(ReLU());
    in = h;
  }
  auto classifier = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Linear>(in, s.num_classes)});
  return std::make_shared<Classifier>("MLP", features, classifier);
}

ModulePtr lenet(const ModelSpec& s) {
  if (s.image_size >= 28) {
    // LeNet-5: 28 -> conv5 pad 2 -> 28 -> pool -> 14 -> conv5 -> 10 -> pool -> 5.
    const int64_t side = ((s.image_size / 2) - 4) / 2;
    auto features = std::make_shared<Sequential>(std::vector<ModulePtr>{
        std::make_shared<Conv2d>(s.in_channels, 6, 5, Conv2dOptions().padding(2)), ReLU(),
        std::make_shared<MaxPool2d>(2), std::make_shared<Conv2d>(6, 16, 5), ReLU(),
        std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>()});
    auto classifier = std::make_shared<Sequential>(std::vector<ModulePtr>{
        std::make_shared<Linear>(16 * side * side, 120), ReLU(), std::make_shared<Linear>(120, 84),
        ReLU(), std::make_shared<Linear>(84, s.num_classes)});
    return std::make_shared<Classifier>("LeNet", features, classifier);
  }
  check_spec(s, "lenet", 4);
  // Small inputs (8x8 digits): two 3x3 convs with padding, each followed by 2x2 pooling.
  const int64_t side = s.image_size / 4;
  auto features = std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(s.in_channels, 16, 3, Conv2dOptions().padding(1)), ReLU(),
      std::make_shared<MaxPool2d>(2),
      std::make_shared<Conv2d>(16, 32, 3, Conv2dOptions().padding(1)), ReLU(),
      std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>()});
  auto classifier = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Linear>(32 * side * side, 64), ReLU(),
                             std::make_shared<Linear>(64, s.num_classes)});
  return std::make_shared<Classifier>("LeNet", features, classifier);
}

ModulePtr resnet20(const ModelSpec& s) {
  check_spec(s, "resnet20", 4);
  return std::make_shared<ResNet>(s);
}

ModulePtr vgg_small(const ModelSpec& s) {
  check_spec(s, "vgg_small", 8);
  auto features = std::make_shared<Sequential>();
  int64_t in = s.in_channels;
  for (int64_t w : {32, 64, 128}) {
    for (int rep = 0; rep < 2; ++rep) {
      features->push_back(std::make_shared<Conv2d>(in, w, 3, Conv2dOptions().padding(1), false));
      features->push_back(std::make_shared<BatchNorm2d>(w));
      features->push_back(ReLU());
      in = w;
    }
    features->push_back(std::make_shared<MaxPool2d>(2));
  }
  features->push_back(std::make_shared<AdaptiveAvgPool2d>(1));
  features->push_back(std::make_shared<Flatten>());
  auto classifier = std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Linear>(128, 128), ReLU(), std::make_shared<Linear>(128, s.num_classes)});
  return std::make_shared<Classifier>("VGGSmall", features, classifier);
}

ModulePtr resnet50(const ModelSpec& s) {
  check_spec(s, "resnet50", 32);
  return std::make_shared<ResNet50>(s);
}

ModulePtr vgg16(const ModelSpec& s) {
  check_spec(s, "vgg16", 32);
  // Configuration D of Simonyan & Zisserman (2015): 0 is a 2x2 max pool.
  const int64_t config[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                            0,  512, 512, 512, 0,   512, 512, 512, 0};
  auto features = std::make_shared<Sequential>();
  int64_t in = s.in_channels;
  for (int64_t v : config) {
    if (v == 0) {
      features->push_back(std::make_shared<MaxPool2d>(2));
      continue;
    }
    features->push_back(std::make_shared<Conv2d>(in, v, 3, Conv2dOptions().padding(1)));
    features->push_back(ReLU());
    in = v;
  }
  features->push_back(std::make_shared<AdaptiveAvgPool2d>(7));
  features->push_back(std::make_shared<Flatten>());
  auto classifier = std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Linear>(512 * 7 * 7, 4096), ReLU(), std::make_shared<Dropout>(),
      std::make_shared<Linear>(4096, 4096), ReLU(), std::make_shared<Dropout>(),
      std::make_shared<Linear>(4096, s.num_classes)});
  return std::make_shared<Classifier>("VGG16", features, classifier);
}

std::vector<std::string> model_names() {
  return {"mlp", "lenet", "resnet20", "vgg_small", "resnet50", "vgg16"};
}

ModulePtr make_model(const std::string& name, const ModelSpec& spec) {
  if (name == "mlp") return mlp(spec);
  if (name == "lenet") return lenet(spec);
  if (name == "resnet20") return resnet20(spec);
  if (name == "vgg_small") return vgg_small(spec);
  if (name == "resnet50") return resnet50(spec);
  if (name == "vgg16") return vgg16(spec);
  EMBER_THROW(ValueError, "unknown model '", name,
              "': expected mlp, lenet, resnet20, vgg_small, resnet50 or vgg16");
}

}  // namespace ember::nn
