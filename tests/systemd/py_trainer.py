"""A PyTorch trainer run inside the systemd test's container, against the
packaged stoker module and the packaged stokerd:

    python3 py_trainer.py ROOT EPOCHS STEP_S RECONNECT_S

For each epoch it prints one line, "epoch <e> <labels> <image sums>", the
batches' labels and per-image pixel sums in the order received, then "end";
or "error <class> <message>" when the loader raises.
"""
import sys
import time

import stoker


def main():
    root, epochs = sys.argv[1], int(sys.argv[2])
    step, reconnect = float(sys.argv[3]), float(sys.argv[4])
    loader = stoker.DataLoader(
        root, batch_size=4, shuffle=True, seed=3, slots=4, name="py",
        transform=[{"resize": {"height": 32, "width": 32}}],
        reconnect_timeout=reconnect)
    print("len", len(loader), flush=True)
    try:
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            labels, sums = [], []
            for images, batch_labels in loader:
                time.sleep(step)
                labels += batch_labels.tolist()
                sums += images.flatten(1).sum(1).tolist()
            print("epoch", epoch, ",".join(map(str, labels)),
                  ",".join(map(str, sums)), flush=True)
    except stoker.StokerError as error:
        print("error", type(error).__name__, str(error).replace("\n", " "),
              flush=True)
        return 1
    finally:
        loader.close()
    print("end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
