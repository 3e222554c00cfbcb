// A complete training program on Ember's public C++ API: a small CNN on the bundled 8x8 digits.
// Build: part of the CMake build (examples/). Run: ./build/bin/example_train_digits [epochs]
#include <cstdio>
#include <cstdlib>

#include <ember.h>

using namespace ember;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 10;
  manual_seed(0);

  // Data: 1,442 training and 355 test images, float32 [N, 1, 8, 8] in [0, 1].
  TensorDataset train = load_digits(default_data_dir(), Split::train);
  TensorDataset test = load_digits(default_data_dir(), Split::test);
  DataLoader loader(train, /*batch_size=*/32, /*shuffle=*/true, /*drop_last=*/false, /*seed=*/0);

  // Model: conv(1->16) relu pool conv(16->32) relu pool, then two linear layers.
  auto model = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(1, 16, 3, Conv2dOptions().padding(1)), nn::ReLU(),
      std::make_shared<nn::MaxPool2d>(2),
      std::make_shared<nn::Conv2d>(16, 32, 3, Conv2dOptions().padding(1)), nn::ReLU(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(32 * 2 * 2, 64), nn::ReLU(), std::make_shared<nn::Linear>(64, 10)});
  nn::SGD opt(model->parameters(), nn::SGDOptions{/*lr=*/0.05, /*momentum=*/0.9});
  nn::CosineAnnealingLR schedule(opt, epochs);

  for (int epoch = 0; epoch < epochs; ++epoch) {
    double loss_sum = 0;
    for (const Batch& b : loader) {
      Tensor loss = cross_entropy((*model)(b.inputs), b.labels);
      opt.zero_grad();
      backward(loss);
      opt.step();
      loss_sum += loss.item() * static_cast<double>(b.labels.numel());
    }
    schedule.step();

    // Test accuracy: no graph, eval mode.
    NoGradGuard no_grad;
    model->eval();
    Tensor predicted = argmax((*model)(test.inputs()), 1);
    double acc = mean(to(eq(predicted, test.labels()), kFloat32)).item();
    model->train();
    std::printf("epoch %2d  loss %.4f  test accuracy %.2f%%\n", epoch + 1,
                loss_sum / static_cast<double>(train.size()), 100.0 * acc);
  }

  // Save the weights; a later program can load them with load_safetensors + load_state_dict.
  save_safetensors("digits_cnn.safetensors", model->state_dict());
  std::printf("saved digits_cnn.safetensors\n");
  return 0;
}
