// Readers for image classification data sets: the bundled 8x8 digits, and MNIST / Fashion-MNIST
// (IDX files) and CIFAR-10 (binary batches) that users download themselves. Each returns a
// TensorDataset of float32 images [N, C, H, W] scaled to [0, 1] and int64 labels [N].
//
// Files are untrusted: sizes, counts, magic numbers and label ranges are checked, and a bad
// file raises FormatError "<path>: <problem>". A missing file raises IOError naming the path
// and the files expected in that directory. Formats and the search order: docs/data.md.
#pragma once

#include <string>

#include "nn/data.h"

namespace ember {

enum class Split { train, test };
const char* split_name(Split split);  // "train" / "test"

// The directory holding Ember's bundled data (the one with digits/digits.bin), searched in
// this order:
//   1. $EMBER_DATA_DIR (if set, it must exist: IOError otherwise, no fallback);
//   2. the source tree's data/ when the library was built with EMBER_SOURCE_DATA_DIR defined;
//   3. ./data;  4. <executable dir>/../data;  5. <executable dir>/../../data;
//   6. <executable dir>/../share/ember/data (an installed layout).
// Throws IOError listing every place tried when none holds digits/digits.bin.
std::string default_data_dir();

// The bundled UCI digits (1,797 images 8x8, pixel values 0..16 scaled by 1/16): Split::train is
// the first 1,442 images of the file, Split::test the last 355 (a fixed split, stratified by class:
// docs/data.md). `data_dir` is the data directory (holding
// digits/digits.bin) or the digits directory itself.
TensorDataset load_digits(const std::string& data_dir, Split split);

// MNIST or Fashion-MNIST from uncompressed IDX files in `dir`: train-images-idx3-ubyte and
// train-labels-idx1-ubyte (Split::train), t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte
// (Split::test). Images [N, 1, rows, cols] (pixels / 255), labels 0..9. Checks the magic
// numbers (0x00000803 images, 0x00000801 labels), the file sizes, and that the counts match.
// Gzipped files are not read: a missing file whose .gz exists says to gunzip it.
TensorDataset load_mnist(const std::string& dir, Split split);

// CIFAR-10 binary version from `dir` (or `dir`/cifar-10-batches-bin): data_batch_1.bin ..
// data_batch_5.bin (Split::train) or test_batch.bin (Split::test). Each file holds records of
// 1 label byte (0..9) and 3,072 pixel bytes (1024 red, 1024 green, 1024 blue, rows top to
// bottom); the official files have 10,000 records, and any positive whole number is accepted.
// Images [N, 3, 32, 32] (pixels / 255).
TensorDataset load_cifar10(const std::string& dir, Split split);

}  // namespace ember
