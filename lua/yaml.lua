local yaml = {} package.loaded.yaml = yaml
