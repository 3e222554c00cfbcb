"""ember.onnx.export: placeholder replaced below."""


def export(module, example_input, path, opset_version=13):
    raise NotImplementedError
