"""torchvision transforms -> the daemon's pipeline: every translation and
every refusal (no daemon needed)."""
import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")

from stoker import UnsupportedTransform, translate_transform  # noqa: E402
from stoker.errors import InvalidArgument  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def test_training_compose():
    pipeline, output = translate_transform(T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
        T.ToTensor(), T.Normalize(MEAN, STD)]))
    crop = pipeline[0]["random_resized_crop"]
    assert (crop["height"], crop["width"]) == (224, 224)
    assert crop["scale_min"] == pytest.approx(0.08)
    assert crop["scale_max"] == 1.0
    assert crop["ratio_min"] == pytest.approx(3 / 4)
    assert crop["ratio_max"] == pytest.approx(4 / 3)
    assert crop["interpolation"] == "INTERPOLATION_BILINEAR"
    assert pipeline[1] == {"random_horizontal_flip": {"p": 0.5}}
    assert pipeline[2]["normalize"]["mean"] == pytest.approx(MEAN)
    assert pipeline[2]["normalize"]["std"] == pytest.approx(STD)
    assert output == {"dtype": "DTYPE_FLOAT32", "layout": "LAYOUT_NCHW"}


def test_arguments_are_carried():
    pipeline, _ = translate_transform(T.Compose([
        T.RandomResizedCrop((96, 128), scale=(0.3, 0.9), ratio=(0.5, 2.0),
                            interpolation=T.InterpolationMode.NEAREST),
        T.RandomHorizontalFlip(p=0.25),
        T.ColorJitter(brightness=0.4, contrast=0.3, saturation=0.2,
                      hue=0.1)]))
    crop = pipeline[0]["random_resized_crop"]
    assert (crop["height"], crop["width"]) == (96, 128)
    assert (crop["scale_min"], crop["scale_max"]) == pytest.approx((0.3, 0.9))
    assert (crop["ratio_min"], crop["ratio_max"]) == pytest.approx((0.5, 2.0))
    assert crop["interpolation"] == "INTERPOLATION_NEAREST"
    assert pipeline[1]["random_horizontal_flip"]["p"] == 0.25
    jitter = pipeline[2]["color_jitter"]
    assert (jitter["brightness"], jitter["contrast"], jitter["saturation"],
            jitter["hue"]) == pytest.approx((0.4, 0.3, 0.2, 0.1))


def test_evaluation_compose_and_sizes():
    pipeline, output = translate_transform(T.Compose([
        T.Resize(256), T.CenterCrop(224), T.PILToTensor()]))
    assert pipeline[0]["resize"]["shorter_side"] == 256
    assert pipeline[1] == {"center_crop": {"height": 224, "width": 224}}
    assert output == {"dtype": "DTYPE_UINT8", "layout": "LAYOUT_NCHW"}
    pipeline, _ = translate_transform(T.Resize((100, 200)))
    assert (pipeline[0]["resize"]["height"], pipeline[0]["resize"]["width"]) \
        == (100, 200)
    pipeline, _ = translate_transform(T.Compose([T.Resize([64]),
                                                 T.CenterCrop((48, 32))]))
    assert pipeline[0]["resize"]["shorter_side"] == 64
    assert pipeline[1]["center_crop"] == {"height": 48, "width": 32}
    pipeline, _ = translate_transform(
        T.Resize(64, interpolation=T.InterpolationMode.BICUBIC))
    assert pipeline[0]["resize"]["interpolation"] == "INTERPOLATION_BICUBIC"


def test_outputs():
    # Neither ToTensor nor PILToTensor: uint8 NHWC, as the C++ SDK gives.
    assert translate_transform(T.RandomResizedCrop(32))[1] == {
        "dtype": "DTYPE_UINT8", "layout": "LAYOUT_NHWC"}
    assert translate_transform(T.Compose([
        T.RandomResizedCrop(32), T.ToTensor()]))[1] == {
        "dtype": "DTYPE_FLOAT32", "layout": "LAYOUT_NCHW"}
    assert translate_transform(T.Compose([
        T.RandomResizedCrop(32), T.PILToTensor(),
        T.ConvertImageDtype(torch.float16)]))[1] == {
        "dtype": "DTYPE_FLOAT16", "layout": "LAYOUT_NCHW"}
    assert translate_transform(T.Compose([
        T.RandomResizedCrop(32), T.PILToTensor(),
        T.ConvertImageDtype(torch.float32)]))[1]["dtype"] == "DTYPE_FLOAT32"


def test_nested_compose_flattens():
    inner = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip()])
    pipeline, _ = translate_transform(T.Compose([inner, T.ToTensor()]))
    assert [next(iter(op)) for op in pipeline] == [
        "random_resized_crop", "random_horizontal_flip"]


def test_native_spec_passes_through():
    native = [{"resize": {"height": 32, "width": 32}}]
    assert translate_transform(native) == (native, {
        "dtype": "DTYPE_UINT8", "layout": "LAYOUT_NHWC"})


@pytest.mark.parametrize("transform, named", [
    (T.Compose([T.RandomResizedCrop(32),
                T.AugMix(interpolation=T.InterpolationMode.BICUBIC)]),
     "BICUBIC"),
    (T.Compose([T.RandomResizedCrop(32), T.RandAugment(),
                T.ColorJitter(0.1)]), "impossible order"),
    (T.Compose([T.RandomResizedCrop(32), T.Lambda(lambda x: x)]), "Lambda"),
    (T.Compose([T.RandomResizedCrop(32), T.RandomOrder([T.GaussianBlur(3)])]),
     "RandomOrder"),
    (T.RandomResizedCrop(32, interpolation=T.InterpolationMode.LANCZOS),
     "LANCZOS"),
    (T.Compose([T.Resize(32, max_size=40), T.CenterCrop(32)]), "max_size"),
    (T.Compose([T.RandomResizedCrop(32), T.ColorJitter(hue=(-0.1, 0.2))]),
     "hue"),
    (T.Compose([T.RandomResizedCrop(32), T.ColorJitter(brightness=(0.5, 1.1))]),
     "brightness"),
    (T.Compose([T.RandomResizedCrop(32), T.Normalize(MEAN, STD)]),
     "Normalize needs a float tensor"),
    (T.Compose([T.ToTensor(), T.RandomResizedCrop(32)]), "after ToTensor"),
    (T.Compose([T.ToTensor(), T.Normalize([0.5], [0.5])]), "3 values"),
    (T.Compose([T.RandomResizedCrop(32), T.ToTensor(),
                T.ConvertImageDtype(torch.float16)]),
     "converts only PILToTensor"),
    (T.Compose([T.RandomHorizontalFlip(), T.ToTensor()]), "fix the image size"),
    (None, "fix the image size"),
])
def test_refusals_name_the_transform_and_point_to_what_runs(transform, named):
    """Short (the whole list of ops made them 1.3 KB): the transform, why,
    and where the list is."""
    with pytest.raises(UnsupportedTransform) as caught:
        translate_transform(transform)
    message = str(caught.value)
    assert named in message
    assert "docs/transforms.md" in message and len(message) < 500, message
    assert isinstance(caught.value, InvalidArgument)
    assert isinstance(caught.value, ValueError)
